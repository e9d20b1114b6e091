-- decide.lua: the driver of a one-key decision, the end of the script. The
-- assembler puts before it "local read, step, write, refund = <name>_read,
-- <name>_step, <name>_write, <name>_refund". It reads KEYS[1], runs the step on it with the
-- parameters in ARGV[3…] (at most four), writes what the step returned and replies with
-- its result. A read and write of nil mean a state held in one string: GET,
-- and SET … PX for aux µs (see ttl_ms). The driver is top-level code, not a
-- function, and the string state needs no closures: a script rebuilds every
-- closure it defines on each call.
--
-- KEYS[2], if given, is the request's once key (see once.lua); ARGV[3…6]
-- then hold four parameters, '' for those the kind does not take, ARGV[7]
-- the limit, ARGV[8] the record's least lifetime in µs (once_horizon), and
-- the reply ends with the limit and the charge: ARGV[3], ARGV[5] and the
-- cost, or the first admission's.
-- requires: once.lua

local key, once = KEYS[1], KEYS[2]
if once then once_horizon = tonumber(ARGV[8]) or 0 end
local seen = once_seen(once)
if seen then
  return {seen[1], seen[2], seen[3], seen[4], seen[5], seen[7] or tonumber(ARGV[7]),
    seen[8] or tonumber(ARGV[3]), seen[9] or tonumber(ARGV[5]) or 0, seen[10] or cost}
end
local state
if read then state = read(key) else state = str_get(key) end
local allowed, remaining, retry, reset, at, new, aux, aux2, aux3 = step(key, state,
  tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
if new then
  if write then write(key, new, aux, aux2, aux3) else str_set(key, new, aux) end
end
if once then
  local limit, p1, p3 = tonumber(ARGV[7]), tonumber(ARGV[3]), tonumber(ARGV[5]) or 0
  if allowed == 1 and cost > 0 then
    once_keep(once, {allowed, remaining, retry, reset, at, 0, limit, p1, p3, cost}, reset)
  end
  return {allowed, remaining, retry, reset, at, limit, p1, p3, cost}
end
return {allowed, remaining, retry, reset, at}

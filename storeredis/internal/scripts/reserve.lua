-- reserve.lua: the driver of a reservation (algorithms.Reserver), for the
-- kinds whose step is bucket.lua. The assembler puts before it "local read,
-- step, write, refund = <name>_read, <name>_step, <name>_write,
-- <name>_refund".
--
-- ARGV[3…5] limit (rate count), window (period) µs, burst
-- ARGV[6]   the longest wait the booking accepts, µs
-- Reply     {allowed, remaining, retry_after, reset_after, at, delay}: delay
--           is the wait until the booked request's turn
-- KEYS[2]   if given, the request's once key (see once.lua); ARGV[7] is
--           then the limit, ARGV[8] the record's least lifetime in µs
--           (once_horizon), and the reply ends with the limit and the
--           charge: ARGV[3], ARGV[5] and the cost, or the first admission's
-- requires: once.lua

local key, once = KEYS[1], KEYS[2]
if once then once_horizon = tonumber(ARGV[8]) or 0 end
local seen = once_seen(once)
if seen then
  return {seen[1], seen[2], seen[3], seen[4], seen[5], seen[6], seen[7] or tonumber(ARGV[7]),
    seen[8] or tonumber(ARGV[3]), seen[9] or tonumber(ARGV[5]), seen[10] or cost}
end
slack = tonumber(ARGV[6])
local state
if read then state = read(key) else state = str_get(key) end
local allowed, remaining, retry, reset, at, new, aux, delay = step(key, state,
  tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
if new then
  if write then write(key, new, aux) else str_set(key, new, aux) end
end
if once then
  local reply = {allowed, remaining, retry, reset, at, delay, tonumber(ARGV[7]), tonumber(ARGV[3]), tonumber(ARGV[5]), cost}
  if allowed == 1 then once_keep(once, reply, reset) end
  return reply
end
return {allowed, remaining, retry, reset, at, delay}

-- lease.lua: the driver of a lease's booking (store.Leaser), for the kinds
-- a lease can hold: it books as reserve.lua does for the kinds whose step is
-- bucket.lua, and decides as decide.lua does for the fixed window, whose
-- step takes no slack. The assembler puts before it "local read, step,
-- write, refund = <name>_read, <name>_step, <name>_write, <name>_refund".
-- An admission writes the state it leaves to the mark, KEYS[2], as it
-- writes it to the state, with the same TTL: reset.lua puts the mark back.
--
-- KEYS[2]   the state's mark
-- ARGV[3…5] limit (rate count), window (period) µs, burst ('' for the
--           fixed window)
-- ARGV[6]   the longest wait a booking accepts, µs
-- Reply     {allowed, remaining, retry_after, reset_after, at, delay}, as
--           reserve.lua's: delay is 0 for the fixed window
-- KEYS[3]   if given, the request's once key (see once.lua); ARGV[7] is
--           then the limit, ARGV[8] the record's least lifetime in µs
--           (once_horizon), and the reply ends with the limit and the
--           charge: ARGV[3], ARGV[5] (0 for none) and the cost, or the
--           first admission's
-- requires: once.lua

local key, mark, once = KEYS[1], KEYS[2], KEYS[3]
local p1, p3 = tonumber(ARGV[3]), tonumber(ARGV[5]) or 0
if once then once_horizon = tonumber(ARGV[8]) or 0 end
local seen = once_seen(once)
if seen then
  return {seen[1], seen[2], seen[3], seen[4], seen[5], seen[6], seen[7] or tonumber(ARGV[7]),
    seen[8] or p1, seen[9] or p3, seen[10] or cost}
end
slack = tonumber(ARGV[6])
local state = str_get(key)
local allowed, remaining, retry, reset, at, new, aux, delay = step(key, state,
  p1, tonumber(ARGV[4]), tonumber(ARGV[5]))
delay = delay or 0
-- Every kind a lease can hold keeps its state in one string (its read and
-- write are nil), which reset.lua puts back with a SET.
if new then
  str_set(key, new, aux)
  if allowed == 1 then redis.call('SET', mark, new, 'PX', ttl_ms(aux)) end
end
if once then
  local reply = {allowed, remaining, retry, reset, at, delay, tonumber(ARGV[7]), p1, p3, cost}
  if allowed == 1 then once_keep(once, reply, reset) end
  return reply
end
return {allowed, remaining, retry, reset, at, delay}

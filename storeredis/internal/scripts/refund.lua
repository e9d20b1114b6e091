-- refund.lua: the driver of a refund (store.Refunder). The assembler puts
-- before it "local read, step, write, refund = <name>_read, <name>_step,
-- <name>_write, <name>_refund".
--
-- KEYS[1]   the key's state, as in decide.lua
-- KEYS[2]   if given, the refund's once key (see once.lua): a refund that
--           changed the state is kept, and not applied again; ARGV[4…7]
--           then hold four parameters ('' for those the kind does not
--           take), ARGV[8] the limit, ARGV[9] the record's least lifetime
--           in µs (once_horizon), ARGV[10] how long in µs a charge counts
--           at most (algorithms.Quota's Window), and the reply ends with
--           the limit
-- KEYS[3]   if given, the once key of the admission the refund gives back
--           (a decision or a booking with the same ID), and KEYS[4] that of
--           a set's admission with it (see decide_set.lua): while either
--           exists the refund applies, and both are deleted, so that the
--           request retried is charged again; a later refund of that new
--           admission applies in turn
-- requires: once.lua
-- ARGV[1]   now (see prelude.lua)
-- ARGV[2]   the units to give back (the prelude's cost)
-- ARGV[3]   the time the refunded request was charged at, its Result.At, µs
-- ARGV[4…]  the algorithm's parameters, as decide.lua's ARGV[3…]
-- Reply     {allowed, remaining, retry_after, reset_after, at}: what a
--           decision of cost 0 replies after the refund
--
-- The refund step changes the state (a string state comes back as the new
-- string); the key is then inspected, and keeps its state for the
-- inspection's reset_after, and at least until the time it was decided at:
-- a state that counts nothing may still hold a later time than now, which
-- a stale reading is decided at; and as long as the refund step asks.

local key, once, admitted, inset = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if once then once_horizon = tonumber(ARGV[9]) or 0 end
if once and not (admitted and redis.call('EXISTS', admitted, inset) > 0) then
  local seen = once_seen(once)
  if seen then return seen end
end
local at = tonumber(ARGV[3])
local p1, p2, p3, p4 = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local state
if read then state = read(key) else state = str_get(key) end
local new, least = refund(key, state, at, p1, p2, p3, p4)
if new then
  if read then state = read(key) else state = new end
end
cost, need = 0, 1
local allowed, remaining, retry, reset, when = step(key, state, p1, p2, p3, p4)
if new then
  local keep = max(reset, when - now, least or 0)
  if read then
    redis.call('PEXPIRE', key, ttl_ms(keep))
  else
    str_set(key, new, keep)
  end
end
if once then
  local reply = {allowed, remaining, retry, reset, when, tonumber(ARGV[8])}
  if new then
    -- Kept as long as the refunded charge could count (the quota's
    -- window), for a retry of the refund, however soon the state itself
    -- goes.
    once_keep(once, reply, max(reset, tonumber(ARGV[10]) or 0))
    if admitted then redis.call('DEL', admitted, inset) end
  end
  return reply
end
return {allowed, remaining, retry, reset, when}

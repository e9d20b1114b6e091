-- decide_set.lua: the driver of a decision over a set of limits on one
-- subject, all or nothing (store.SetDecider), made by set.lua's set_decide.
-- The assembler puts before it the step files of the set's kinds and "local
-- kinds = {{<name>_read, <name>_step, <name>_write}, ...}".
--
-- KEYS[i]  limit i's state, for each of the n limits; KEYS[n + 1], if
--          given, the request's once key (see once.lua): each limit then
--          has m = 5 values, four parameters ('' for those its kind does
--          not take) and its limit, and the reply ends with each limit's
--          limit and charge (its first and third parameters), then the
--          cost
--          KEYS[n + 2…2n], then, are the other limits' states' own once
--          keys for the request: an admission marks each, so that a
--          refund with the ID forgets it (see refund.lua)
-- ARGV[1]  now, ARGV[2] cost (see prelude.lua)
-- ARGV[3]  the once key's least lifetime in µs (once_horizon), 0 without
-- ARGV[4…] for each limit in turn: its kind's index in kinds, the number m
--          of its parameters, then its m parameters (as in decide.lua)
-- Reply    {allowed, remaining, retry_after, reset_after, at} for each limit
-- requires: once.lua
-- requires: set.lua

once_horizon = tonumber(ARGV[3]) or 0
local limits = set_limits(4)
local n = #limits
local once = KEYS[n + 1]
local seen = once_seen(once)
if seen then return seen end

local reply = {}
local all, longest = set_decide(0, limits, reply, 0)
if once then
  for i = 1, n do
    local p = limits[i].p
    reply[#reply + 1] = p[5]
    reply[#reply + 1] = p[1]
    reply[#reply + 1] = p[3] or 0
  end
  reply[#reply + 1] = cost
  if all and cost > 0 then
    once_keep(once, reply, longest)
    for j = n + 2, #KEYS do redis.call('SET', KEYS[j], '1', 'PX', ttl_ms(max(longest, once_horizon))) end
  end
end
return reply

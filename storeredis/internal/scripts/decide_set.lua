-- decide_set.lua: the driver of a decision over a set of limits on one
-- subject, all or nothing (store.SetDecider). The assembler puts before it
-- the step files of the set's kinds and "local kinds = {{<name>_read,
-- <name>_step, <name>_write}, ...}".
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
--
-- Every step runs first, writing nothing. If all admit, each writes what it
-- returned: every limit is charged. If any denies, only the denying steps
-- write (a denial writes what it would alone: expired records dropped, the
-- latest time), and each admitting limit is decided again at cost 0, an
-- inspection, for its uncharged result. An inspection writes only a bucket
-- state it converted from another rate count, as it would alone.

once_horizon = tonumber(ARGV[3]) or 0
local n, limits, pos = 0, {}, 4
while ARGV[pos] do
  local kind, m = kinds[tonumber(ARGV[pos])], tonumber(ARGV[pos + 1])
  local p = {}
  for j = 1, m do p[j] = tonumber(ARGV[pos + 1 + j]) end
  n = n + 1
  limits[n], pos = {kind = kind, p = p, limit = p[5], charged = {p[1], p[3] or 0}}, pos + 2 + m
end
local once = KEYS[n + 1]
local seen = once_seen(once)
if seen then return seen end

local function run(i)
  local l = limits[i]
  return {l.kind[2](KEYS[i], l.state, l.p[1], l.p[2], l.p[3], l.p[4])}
end

local results, all = {}, true
for i = 1, n do
  local l = limits[i]
  if l.kind[1] then l.state = l.kind[1](KEYS[i]) else l.state = redis.call('GET', KEYS[i]) end
  results[i] = run(i)
  if results[i][1] ~= 1 then all = false end
end

local function write(i)
  local r, l = results[i], limits[i]
  if not r[6] then return end
  if l.kind[3] then l.kind[3](KEYS[i], r[6], r[7], r[8], r[9]) else redis.call('SET', KEYS[i], r[6], 'PX', ttl_ms(r[7])) end
end

if cost > 0 then
  for i = 1, n do
    if all or results[i][1] ~= 1 then
      write(i)
    else
      local c, nd = cost, need
      cost, need = 0, 1
      results[i] = run(i)
      cost, need = c, nd
      write(i) -- an inspection writes only a state it converted
    end
  end
else
  for i = 1, n do write(i) end -- likewise
end

local reply, longest = {}, 0
for i = 1, n do
  for j = 1, 5 do reply[#reply + 1] = results[i][j] end
  longest = max(longest, results[i][4])
end
if once then
  for i = 1, n do
    reply[#reply + 1] = limits[i].limit
    reply[#reply + 1] = limits[i].charged[1]
    reply[#reply + 1] = limits[i].charged[2]
  end
  reply[#reply + 1] = cost
  if all and cost > 0 then
    once_keep(once, reply, longest)
    for j = n + 2, #KEYS do redis.call('SET', KEYS[j], '1', 'PX', ttl_ms(max(longest, once_horizon))) end
  end
end
return reply

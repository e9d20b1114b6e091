-- decide_set_batch.lua: the driver of a batch of decisions over sets of
-- limits (store.SetDecider), each made by set.lua's set_decide, sent
-- together by callers that shared a round trip (see WithCoalescing). Every
-- set of the batch has the same kinds: the assembler puts before it what it
-- puts before decide_set.lua.
--
-- KEYS     each decision's n states in turn (n the number of its limits);
--          then the once keys of the decisions that have one
-- ARGV[1]  '' to decide every decision at Redis's TIME, read once, or a
--          number for client time, each decision then giving its own now
-- ARGV[2]  the once keys' least lifetime in µs (once_horizon; the prelude
--          also reads it as a cost, which each decision sets)
-- ARGV[3]  s, the number of distinct sets of limits; then each set: its
--          number of limits n, then its limits as decide_set.lua reads
--          them (each its kind's index in kinds, the number m of its
--          parameters, and those)
-- then     for each decision in turn: the index of its set (from 1), its
--          cost, the index in KEYS of its once key (see once.lua) or 0 for
--          none, and in client time its now
-- Reply    each decision's {allowed, remaining, retry_after, reset_after,
--          at} for each of its limits, flattened; a decision that raised
--          an error replies -1, its message and zeros instead, as many
--          fields, and the others are unaffected
--
-- Decisions run in order, each reading the state the one before it left,
-- exactly as if each had been its own script. A once key here is one the
-- store made, never the caller's (see once.lua), and its record keeps the
-- decision's 5n fields only.
-- requires: once.lua
-- requires: set.lua

local clientTime = ARGV[1] ~= ''
once_horizon = tonumber(ARGV[2]) or 0
local sets, pos = {}, 4
for j = 1, tonumber(ARGV[3]) do
  sets[j], pos = set_limits(pos + 1, tonumber(ARGV[pos]))
end
local width = 3
if clientTime then width = 4 end

local function one(base, limits, at)
  cost = tonumber(ARGV[at + 1])
  local once = tonumber(ARGV[at + 2])
  if once == 0 then once = nil else once = KEYS[once] end
  if clientTime then now = tonumber(ARGV[at + 3]) end
  need = cost
  if cost <= 0 then need = max(-cost, 1) end
  local seen = once_seen(once)
  if seen then return seen end
  local results, all, longest = set_decide(base, limits)
  local r = {}
  for i = 1, #limits do
    local x, k = results[i], 5 * (i - 1)
    r[k + 1], r[k + 2], r[k + 3], r[k + 4], r[k + 5] = x[1], x[2], x[3], x[4], x[5]
  end
  if once and all and cost > 0 then once_keep(once, r, longest) end
  return r
end

local reply, n, base = {}, 0, 0
for at = pos, #ARGV, width do
  local limits = sets[tonumber(ARGV[at])]
  local ok, r = pcall(one, base, limits, at)
  local fields = 5 * #limits
  if ok then
    for i = 1, fields do reply[n + i] = r[i] end
  else
    -- Redis 7 raises a table {err = message}; older versions a string.
    local message = r
    if type(message) == 'table' then message = message.err end
    reply[n + 1], reply[n + 2] = -1, tostring(message)
    for i = 3, fields do reply[n + i] = 0 end
  end
  n, base = n + fields, base + #limits
end
return reply

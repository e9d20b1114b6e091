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
set_memo = {}
once_horizon = tonumber(ARGV[2]) or 0
local sets, pos = {}, 4
for j = 1, tonumber(ARGV[3]) do
  sets[j], pos = set_limits(pos + 1, tonumber(ARGV[pos]))
end
local width = 3
if clientTime then width = 4 end

-- one makes the decision whose arguments start at ARGV[at], on the
-- limits of its set, whose states start after KEYS[base], and puts its
-- reply in reply from reply[n + 1] on.
local reply = {}
local function one(base, limits, at, n)
  cost = tonumber(ARGV[at + 1])
  local once = tonumber(ARGV[at + 2])
  if once == 0 then once = nil else once = KEYS[once] end
  if clientTime then now = tonumber(ARGV[at + 3]) end
  need = cost
  if cost <= 0 then need = max(-cost, 1) end
  local seen = once_seen(once)
  if seen then
    for i = 1, 5 * #limits do reply[n + i] = seen[i] end
    return
  end
  local all, longest = set_decide(base, limits, reply, n)
  if once and all and cost > 0 then
    local r = {}
    for i = 1, 5 * #limits do r[i] = reply[n + i] end
    once_keep(once, r, longest)
  end
end

local n, base = 0, 0
for at = pos, #ARGV, width do
  local limits = sets[tonumber(ARGV[at])]
  local ok, err = pcall(one, base, limits, at, n)
  local fields = 5 * #limits
  if not ok then
    -- Redis 7 raises a table {err = message}; older versions a string.
    if type(err) == 'table' then err = err.err end
    reply[n + 1], reply[n + 2] = -1, tostring(err)
    for i = 3, fields do reply[n + i] = 0 end
  end
  n, base = n + fields, base + #limits
end
return reply

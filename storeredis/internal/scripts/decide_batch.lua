-- decide_batch.lua: the driver of a batch of one-key decisions of one
-- algorithm kind, sent together by callers that shared a round trip (see
-- WithCoalescing). The assembler puts before it "local read, step, write,
-- refund = <name>_read, <name>_step, <name>_write, <name>_refund", as for
-- decide.lua.
--
-- KEYS[i]  decision i's key; one key may come more than once; then the
--          once keys of the decisions that have one
-- ARGV[1]  '' to decide every decision at Redis's TIME, read once, or a
--          number for client time, each decision then giving its own now
-- ARGV[2]  the once keys' least lifetime in µs (once_horizon; the prelude
--          also reads it as a cost, which each decision sets)
-- ARGV[3]  m, the number of parameter sets, and ARGV[4] w, the parameters
--          in each (as in decide.lua: limit, window, then burst or
--          sub-windows); then the m sets, w values each
-- then     for each decision in turn: the index of its parameter set (from
--          1), its cost, the index in KEYS of its once key (see once.lua)
--          or 0 for none, and in client time its now; once keys follow the
--          decisions' keys in KEYS
-- Reply    {allowed, remaining, retry_after, reset_after, at} for each
--          decision, flattened; a decision that raised an error replies
--          {-1, message, 0, 0, 0} instead, and the others are unaffected
--
-- Decisions run in order, each reading the state the one before it left,
-- exactly as if each had been its own script: the batch is atomic as a
-- whole, which is more than each needs.
-- requires: once.lua

local clientTime = ARGV[1] ~= ''
once_horizon = tonumber(ARGV[2]) or 0
local m, w = tonumber(ARGV[3]), tonumber(ARGV[4])
local sets = {}
for j = 0, m - 1 do
  local b = 5 + j * w
  local set = {}
  for x = 1, w do set[x] = tonumber(ARGV[b + x - 1]) end
  sets[j + 1] = set
end
local first, width = 5 + m * w, 3
if clientTime then width = 4 end
local calls = (#ARGV - first + 1) / width

local function one(i)
  local base = first + (i - 1) * width
  local p = sets[tonumber(ARGV[base])]
  cost = tonumber(ARGV[base + 1])
  local once = tonumber(ARGV[base + 2])
  if once == 0 then once = nil else once = KEYS[once] end
  if clientTime then now = tonumber(ARGV[base + 3]) end
  need = cost
  if cost <= 0 then need = max(-cost, 1) end
  local seen = once_seen(once)
  if seen then return seen[1], seen[2], seen[3], seen[4], seen[5] end
  local key = KEYS[i]
  local state
  if read then state = read(key) else state = redis.call('GET', key) end
  local allowed, remaining, retry, reset, at, new, aux, aux2, aux3 = step(key, state, p[1], p[2], p[3], p[4])
  if new then
    if write then write(key, new, aux, aux2, aux3) else redis.call('SET', key, new, 'PX', ttl_ms(aux)) end
  end
  if once and allowed == 1 and cost > 0 then
    once_keep(once, {allowed, remaining, retry, reset, at}, reset)
  end
  return allowed, remaining, retry, reset, at
end

local reply, n = {}, 0
for i = 1, calls do
  local ok, a, b, c, d, e = pcall(one, i)
  if not ok then
    -- Redis 7 raises a table {err = message}; older versions a string.
    local message = a
    if type(message) == 'table' then message = message.err end
    a, b, c, d, e = -1, tostring(message), 0, 0, 0
  end
  reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = a, b, c, d, e
  n = n + 5
end
return reply

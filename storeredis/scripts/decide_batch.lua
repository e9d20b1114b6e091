-- decide_batch.lua: the driver of a batch of one-key decisions of one
-- algorithm kind, sent together by callers that shared a round trip (see
-- coalesce.go). The assembler puts before it "local read, step, write,
-- refund = <name>_read, <name>_step, <name>_write, <name>_refund", as for
-- decide.lua.
--
-- KEYS[i]  decision i's key; one key may come more than once
-- ARGV[1]  '' to decide every decision at Redis's TIME, read once, or a
--          number for client time, each decision then giving its own
-- ARGV[2]  ignored (the prelude reads it as a cost)
-- ARGV[3]  w, the number of values per decision that follow
-- ARGV[4…] for each decision in turn, w values: its now (ignored on Redis's
--          clock), its cost, then its parameters (as in decide.lua)
-- Reply    {allowed, remaining, retry_after, reset_after, at} for each
--          decision, flattened; a decision that raised an error replies
--          {-1, message, 0, 0, 0} instead, and the others are unaffected
--
-- Decisions run in order, each reading the state the one before it left,
-- exactly as if each had been its own script: the batch is atomic as a
-- whole, which is more than each needs.

local w = tonumber(ARGV[3])
local clientTime = ARGV[1] ~= ''

local function one(i, base)
  if clientTime then now = tonumber(ARGV[base]) end
  cost = tonumber(ARGV[base + 1])
  need = cost
  if cost <= 0 then need = max(-cost, 1) end
  local key = KEYS[i]
  local state
  if read then state = read(key) else state = redis.call('GET', key) end
  local p3, p4
  if w > 4 then p3 = tonumber(ARGV[base + 4]) end
  if w > 5 then p4 = tonumber(ARGV[base + 5]) end
  local allowed, remaining, retry, reset, at, new, aux, aux2, aux3 = step(key, state,
    tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), p3, p4)
  if new then
    if write then write(key, new, aux, aux2, aux3) else redis.call('SET', key, new, 'PX', ttl_ms(aux)) end
  end
  return allowed, remaining, retry, reset, at
end

local reply, n = {}, 0
for i = 1, #KEYS do
  local ok, a, b, c, d, e = pcall(one, i, 4 + (i - 1) * w)
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

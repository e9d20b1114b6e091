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
-- ARGV[3]  the call's writer (see rec.lua), 15 bytes, then its deadline in
--          µs on Redis's clock, 7 bytes, 0 for none; or '' for none: a call
--          that carries one names no once keys, and its kind keeps its
--          state in one string
-- ARGV[4]  m, the number of parameter sets, and ARGV[5] w, the parameters
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
-- A state held in one string is read once per key and written once, after
-- every decision on it. With a writer, a call that reaches Redis after its
-- deadline is refused, every decision replying {-2, message, 0, 0, 0}, and
-- changes nothing: its records need to live only until its deadline. The
-- call then reads each of its
-- keys and the record there of its store (rec.lua): a record of a later call
-- means this one is a stray attempt of a call that has returned, and the
-- whole call is refused, every decision replying an error; a record of this
-- call means this is an attempt go-redis sent again after Redis ran the
-- first, and the key's decisions are decided again from the state and at
-- the time the record keeps, writing nothing, which gives the first
-- outcome. Every key the call writes keeps its record.
--
-- Decisions run in order, each reading the state the one before it left,
-- exactly as if each had been its own script: the batch is atomic as a
-- whole, which is more than each needs.
-- requires: once.lua

local clientTime = ARGV[1] ~= ''
once_horizon = tonumber(ARGV[2]) or 0
local writer = ARGV[3]
if writer == '' then writer = nil end
local m, w = tonumber(ARGV[4]), tonumber(ARGV[5])
local sets = {}
for j = 0, m - 1 do
  local b = 6 + j * w
  local set = {}
  for x = 1, w do set[x] = tonumber(ARGV[b + x - 1]) end
  sets[j + 1] = set
end
local first, width = 6 + m * w, 3
if clientTime then width = 4 end
local calls = (#ARGV - first + 1) / width

-- For a state in one string: each key's state as the decisions so far left
-- it (false for none), the state the call found, the µs the last write asks
-- the key kept (nil while nothing changed it), and for a key decided again
-- the time its record keeps.
local cur, found, dirty, again = {}, {}, {}, {}
local order = {} -- the keys in the order the call first wrote them
local kept = {} -- the once records of admissions whose key is still to be written

local function state_of(key)
  local s = cur[key]
  if s == nil then
    s = str_get(key)
    cur[key], found[key] = s, s
  end
  return s
end

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
  if read then
    local state = read(key)
    local allowed, remaining, retry, reset, at, new, aux, aux2, aux3 = step(key, state, p[1], p[2], p[3], p[4])
    if new then write(key, new, aux, aux2, aux3) end
    if once and allowed == 1 and cost > 0 then
      once_keep(once, {allowed, remaining, retry, reset, at}, reset)
    end
    return allowed, remaining, retry, reset, at
  end
  local state = state_of(key)
  local t = again[key]
  local saved = now
  if t and not clientTime then now = t end
  local ok, allowed, remaining, retry, reset, at, new, aux = pcall(step, key, state, p[1], p[2], p[3], p[4])
  now = saved
  if not ok then error(allowed, 0) end
  if new then
    cur[key] = new
    if not t then
      if dirty[key] == nil then order[#order + 1] = key end
      dirty[key] = aux
    end
  end
  if once and allowed == 1 and cost > 0 then
    -- Kept once the key's write has succeeded.
    kept[#kept + 1] = {key, once, {allowed, remaining, retry, reset, at}, reset}
  end
  return allowed, remaining, retry, reset, at
end

local reply, n = {}, 0
local function fail(message)
  -- Redis 7 raises a table {err = message}; older versions a string.
  if type(message) == 'table' then message = message.err end
  return -1, tostring(message), 0, 0, 0
end

local life = once_horizon -- how long the call's records are kept, µs
if writer then
  local inst, seq, deadline = string.sub(writer, 1, 8), bin_unpack('>I7I7', writer, 9)
  if deadline > 0 then
    local left = deadline - rec_clock()
    if left < 0 then
      for _ = 1, calls do
        reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
          -2, 'ratewise: the call reached Redis after its deadline', 0, 0, 0
        n = n + 5
      end
      return reply
    end
    life = min(life, left)
  end
  writer = string.sub(writer, 1, 15)
  local refused
  for i = 1, calls do
    local key = KEYS[i]
    if cur[key] == nil then
      local ok, s = pcall(state_of, key)
      if ok then
        local r, rseq = rec_find(key, inst)
        if r and rseq > seq then
          refused = 'ratewise: a stray attempt of a call that has returned'
        elseif r and rseq == seq then
          local pre, at = rec_pre(r)
          cur[key], again[key] = pre, at
        end
      end
    end
  end
  if refused then
    for i = 1, calls do
      local a, b, c, d, e = fail(refused)
      reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = a, b, c, d, e
      n = n + 5
    end
    return reply
  end
end

for i = 1, calls do
  local ok, a, b, c, d, e = pcall(one, i)
  if not ok then a, b, c, d, e = fail(a) end
  reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = a, b, c, d, e
  n = n + 5
end

-- The writes, a key at a time: a key whose write fails fails every
-- decision on it, as if each had written it alone.
for _, key in ipairs(order) do
  local mine
  if writer then
    local at = 0
    if not clientTime then at = now end
    mine = rec_new(writer, life, at, found[key])
  end
  local ok, err = pcall(str_set, key, cur[key], dirty[key], mine)
  if not ok then
    local _, message = fail(err)
    for i = 1, calls do
      if KEYS[i] == key then reply[5 * i - 4], reply[5 * i - 3] = -1, message end
    end
    dirty[key] = false
  end
end
for _, k in ipairs(kept) do
  if dirty[k[1]] ~= false then once_keep(k[2], k[3], k[4]) end
end
if writer then
  -- A key read and not written keeps no record past its time.
  local pruned = {}
  for i = 1, calls do
    local key = KEYS[i]
    if dirty[key] == nil and not again[key] and not pruned[key] and cur[key] ~= nil then
      pruned[key] = true
      pcall(str_prune, key, cur[key])
    end
  end
end
return reply

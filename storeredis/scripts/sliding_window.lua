-- sliding_window.lua: the sliding window counter (algorithms.SlidingWindow).
--
-- KEYS[1]  a hash: field = the start of a sub-window (µs, decimal),
--          value = the cost admitted in it. At most sub_windows fields count.
-- ARGV[3]  limit
-- ARGV[4]  window (µs)
-- ARGV[5]  sub_windows; window is a whole multiple of it
-- Reply    {allowed, remaining, retry_after µs, reset_after µs}
--
-- HGETALL, HDEL of sub-windows that dropped out, HINCRBY and PEXPIRE when
-- admitted. Inspecting (cost 0) writes nothing.

local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local sub = window / tonumber(ARGV[5])
local key = KEYS[1]

local cur = now - now % sub
local fields = redis.call('HGETALL', key)
local buckets, expired, count = {}, {}, 0
for i = 1, #fields, 2 do
  local start = tonumber(fields[i])
  -- A sub-window starting at or before cur-window has dropped out.
  if start <= cur - window then
    expired[#expired + 1] = fields[i]
  else
    local c = tonumber(fields[i + 1])
    buckets[#buckets + 1] = {start, c}
    count = count + c
  end
end
if cost > 0 and #expired > 0 then redis.call('HDEL', key, unpack(expired)) end
table.sort(buckets, function(a, b) return a[1] < b[1] end)

local allowed, retry = 0, 0
if count + need > limit then
  -- Wait until enough of the oldest sub-windows drop out.
  local excess, i = count + need - limit, 1
  while excess > buckets[i][2] do
    excess = excess - buckets[i][2]
    i = i + 1
  end
  retry = buckets[i][1] + window - now
else
  allowed = 1
  if cost > 0 then
    redis.call('HINCRBY', key, int(cur), cost)
    count = count + cost
    if #buckets == 0 or buckets[#buckets][1] < cur then buckets[#buckets + 1] = {cur, cost} end
  end
end

local reset = 0
if count > 0 then
  reset = buckets[#buckets][1] + window - now
  if allowed == 1 and cost > 0 then redis.call('PEXPIRE', key, ttl_ms(reset)) end
end
return {allowed, limit - count, retry, reset}

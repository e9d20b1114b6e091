-- fixed_window.lua: the fixed window counter (algorithms.FixedWindow).
--
-- KEYS[1]  the key's state, a string "start count": the start of the window
--          being counted (µs) and the cost admitted in it
-- ARGV[3]  limit
-- ARGV[4]  window (µs)
-- Reply    {allowed, remaining, retry_after µs, reset_after µs, at µs}
--
-- GET, then SET … PX when a request is admitted. The key expires when its
-- window ends.

local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])

local start, at = now - now % window, now
local count = 0
local raw = redis.call('GET', KEYS[1])
if raw then
  local s, c = string.match(raw, '^(%d+) (%d+)$')
  s, c = tonumber(s), tonumber(c)
  if s then
    -- A window later than now's means the clock stepped back: keep counting
    -- in it, so nothing extra gets through.
    if s > start then start, at = s, s end
    if s == start then count = c end
  end
end

local allowed, retry, reset = 0, 0, 0
if count + need <= limit then
  allowed = 1
  count = count + cost
  if cost > 0 then
    redis.call('SET', KEYS[1], int(start) .. ' ' .. int(count), 'PX', ttl_ms(start + window - now))
  end
else
  retry = start + window - now
end
if count > 0 then reset = start + window - now end
return {allowed, max(0, limit - count), retry, reset, at}

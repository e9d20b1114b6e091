-- token_bucket.lua: the token bucket (algorithms.TokenBucket).
--
-- KEYS[1]  the key's state, a string "level last": the fill level in units of
--          1/period of a token (a full bucket is capacity × period) at time
--          last (µs). No key means a full bucket.
-- ARGV[3]  capacity
-- ARGV[4]  refill count (tokens per period; also level units gained per µs)
-- ARGV[5]  refill period (µs)
-- Reply    {allowed, remaining, retry_after µs, reset_after µs}
--
-- GET, then SET … PX when a request is admitted. The key expires when the
-- bucket would be full again.

local capacity = tonumber(ARGV[3])
local k = tonumber(ARGV[4])
local p = tonumber(ARGV[5])
local full = capacity * p

local level, last = full, now
local raw = redis.call('GET', KEYS[1])
if raw then
  local l, t = string.match(raw, '^(%-?%d+) (%-?%d+)$')
  level, last = tonumber(l), tonumber(t)
end
local elapsed = now - last
if elapsed > 0 then
  local deficit = full - level
  if elapsed >= ceil(deficit / k) then
    level = full
  else
    level = level + elapsed * k
  end
  last = now
end
-- last is later than now only when the clock stepped back; waits are
-- measured from the caller's now, so they include the gap.
local gap = last - now

local allowed, retry, reset = 0, 0, 0
if level >= need * p then
  level = level - cost * p
  allowed = 1
else
  retry = ceil((need * p - level) / k) + gap
end
if level < full then reset = ceil((full - level) / k) + gap end
if allowed == 1 and cost > 0 then
  redis.call('SET', KEYS[1], int(level) .. ' ' .. int(last), 'PX', ttl_ms(reset))
end
return {allowed, floor(level / p), retry, reset}

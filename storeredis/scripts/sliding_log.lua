-- sliding_log.lua: the exact sliding log on a sorted set (algorithms.SlidingLog).
--
-- KEYS[1]  a sorted set with one member per admitted unit of cost.
--          score:  the timestamp in milliseconds, with the microseconds as the
--                  fraction (1780000000000.123); a double holds it exactly.
--          member: the timestamp in base 36, then "." and an index in base 36
--                  for the second and later records stamped the same
--                  microsecond. Records stamped t are only ever removed all
--                  together, so the index is the number already stamped t and
--                  members are unique by construction.
-- ARGV[3]  limit
-- ARGV[4]  window (µs)
-- Reply    {allowed, remaining, retry_after µs, reset_after µs}
--
-- As in the note's script: ZREMRANGEBYSCORE key -inf now-window (a record
-- exactly one window old no longer counts), ZCARD, then ZADD and PEXPIRE when
-- admitted. Denied requests add nothing. Inspecting (cost 0) counts with
-- ZCOUNT and writes nothing.

local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local key = KEYS[1]

local function score(us) return string.format('%.17g', us / 1000) end
local function micros(s) return math.floor(tonumber(s) * 1000 + 0.5) end

local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
local function base36(n)
  local s = ''
  repeat
    local d = n % 36
    s = string.sub(digits, d + 1, d + 1) .. s
    n = (n - d) / 36
  until n == 0
  return s
end

local cutoff = score(now - window)
local count
if cost > 0 then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
  count = redis.call('ZCARD', key)
else
  count = redis.call('ZCOUNT', key, '(' .. cutoff, '+inf')
end

local allowed, retry = 0, 0
if count + need > limit then
  -- Wait for the (count+need-limit)-th oldest record still counting.
  local oldest = redis.call('ZRANGEBYSCORE', key, '(' .. cutoff, '+inf', 'WITHSCORES', 'LIMIT', count + need - limit - 1, 1)
  retry = micros(oldest[2]) + window - now
elseif cost > 0 then
  local at = score(now)
  local stamp = base36(now)
  local first = redis.call('ZCOUNT', key, at, at)
  local args = {}
  for i = first, first + cost - 1 do
    local member = stamp
    if i > 0 then member = stamp .. '.' .. base36(i) end
    args[#args + 1] = at
    args[#args + 1] = member
    if #args == 1000 then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then redis.call('ZADD', key, unpack(args)) end
  count = count + cost
  allowed = 1
else
  allowed = 1
end

local reset = 0
if count > 0 then
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  reset = micros(newest[2]) + window - now
  if allowed == 1 and cost > 0 then redis.call('PEXPIRE', key, ttl_ms(reset)) end
end
return {allowed, limit - count, retry, reset}

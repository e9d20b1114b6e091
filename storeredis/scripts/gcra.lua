-- gcra.lua: the generic cell rate algorithm (algorithms.GCRA), as redis-cell
-- runs it.
--
-- KEYS[1]  the theoretical arrival time TAT + frac/count µs, stored as the
--          integer "tat" when frac is 0 (Redis keeps it as an int) or the
--          string "tat frac". No key means an idle key.
-- ARGV[3]  burst
-- ARGV[4]  rate count (ticks per µs: durations below are in 1/count µs)
-- ARGV[5]  rate period (µs; the emission interval in ticks)
-- Reply    {allowed, remaining, retry_after µs, reset_after µs}
--
-- GET, then SET … PX when a request is admitted. The key expires at TAT.

local burst = tonumber(ARGV[3])
local k = tonumber(ARGV[4])
local p = tonumber(ARGV[5])
local capacity = burst * p

local tat, frac = now, 0
local raw = redis.call('GET', KEYS[1])
if raw then
  local t, f = string.match(raw, '^(%-?%d+) ?(%-?%d*)$')
  tat, frac = tonumber(t), tonumber(f) or 0
end
-- Normalise a remainder written under other parameters.
tat, frac = tat + floordiv(frac, k), floormod(frac, k)

-- The wait until TAT is dus µs plus frac ticks, d ticks in all. It is only
-- far beyond capacity if the clock stepped back; then d is not formed.
local dus = tat - now
if dus < 0 then dus, frac = 0, 0 end
local beyond = dus > ceildiv(capacity, k)
local d = 0
if not beyond then d = dus * k + frac end

local allowed, retry, reset, remaining = 0, 0, 0, 0
if not beyond and d + need * p <= capacity then
  d = d + cost * p
  allowed = 1
  reset = ceildiv(d, k)
  if cost > 0 then
    local f = floormod(d, k)
    local value = int(now + floordiv(d, k))
    if f > 0 then value = value .. ' ' .. int(f) end
    redis.call('SET', KEYS[1], value, 'PX', ttl_ms(reset))
  end
else
  retry = dus + ceildiv(frac + need * p - capacity, k)
  reset = dus + ceildiv(frac, k)
end
if not beyond then remaining = math.max(0, floordiv(capacity - d, p)) end
return {allowed, remaining, retry, reset}

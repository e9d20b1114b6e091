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
  tat = tonumber(raw)
  if not tat then
    local t, f = string.match(raw, '^(%-?%d+) (%-?%d+)$')
    tat, frac = tonumber(t), tonumber(f)
  end
end
-- Normalise a remainder written under other parameters.
if frac < 0 or frac >= k then tat, frac = tat + floor(frac / k), frac % k end

-- The wait until TAT is dus µs plus frac ticks, d ticks in all. It is only
-- far beyond capacity if the clock stepped back; then d is not formed.
local dus = tat - now
if dus < 0 then dus, frac = 0, 0 end
local beyond = dus > ceil(capacity / k)
local d = 0
if not beyond then d = dus * k + frac end

local allowed, retry, reset, remaining = 0, 0, 0, 0
if not beyond and d + need * p <= capacity then
  d = d + cost * p
  allowed = 1
  reset = ceil(d / k)
  if cost > 0 then
    -- A whole-µs TAT goes as a number, which Redis formats exactly and
    -- stores as an integer; a remainder needs the two-number string.
    local value, f = now + floor(d / k), d % k
    if f > 0 then value = int(value) .. ' ' .. int(f) end
    redis.call('SET', KEYS[1], value, 'PX', ttl_ms(reset))
  end
else
  retry = dus + ceil((frac + need * p - capacity) / k)
  reset = dus + ceil(frac / k)
end
if not beyond and d < capacity then remaining = floor((capacity - d) / p) end
return {allowed, remaining, retry, reset}

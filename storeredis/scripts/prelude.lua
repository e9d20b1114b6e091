-- prelude.lua is prepended to every decision script: it reads the arguments
-- every algorithm shares and defines exact integer helpers.
--
-- ARGV[1]  now in microseconds since the Unix epoch, or -1 to read Redis's
--          own clock (TIME), so that app servers share one timeline
-- ARGV[2]  cost; 0 inspects without writing anything
-- ARGV[3…] the algorithm's parameters (see each script)
--
-- Every decision script replies {allowed, remaining, retry_after, reset_after}:
-- allowed is 1 or 0, remaining is in cost units, and both durations are
-- microseconds, exactly as algorithms.Result defines them.
--
-- Numbers are Lua doubles. All values stay below 2^53, where doubles hold
-- integers exactly; ratewise validates parameters so that they do. Numbers are
-- turned into strings only with string.format, since tostring keeps only 14
-- significant digits.

local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cost = tonumber(ARGV[2])
local need = math.max(cost, 1)

-- Integer division is written floor(a / b) or ceil(a / b), and the floored
-- remainder a % b (which Lua defines as a - floor(a / b) * b). All three are
-- exact here: for integers with |a| + b <= 2^53, a / b is at least 1/b away
-- from the next integer, more than half a unit in the last place, so rounding
-- the division never crosses an integer. The algorithms' bounds keep every
-- operand that small.
local floor, ceil = math.floor, math.ceil

local function int(n) return string.format('%.0f', n) end

-- Milliseconds from microseconds, rounded up: Redis expires keys at
-- millisecond resolution, and a key must outlive its last effect.
local function ttl_ms(us) return ceil(us / 1000) end

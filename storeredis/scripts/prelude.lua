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

-- a - b*floor(a/b), in [0, b). fmod is exact, unlike a/b.
local function floormod(a, b)
  local r = math.fmod(a, b)
  if r < 0 then r = r + b end
  return r
end
local function floordiv(a, b) return (a - floormod(a, b)) / b end
local function ceildiv(a, b) return -floordiv(-a, b) end

local function int(n) return string.format('%.0f', n) end

-- Milliseconds from microseconds, rounded up: Redis expires keys at
-- millisecond resolution, and a key must outlive its last effect.
local function ttl_ms(us) return ceildiv(us, 1000) end

-- prelude.lua is prepended to every decision script: it reads the arguments
-- every algorithm shares and defines exact integer helpers.
--
-- ARGV[1]  now in microseconds since the Unix epoch, or the empty string to
--          read Redis's own clock (TIME), so that app servers share one
--          timeline; no number selects it, so no client time can
-- ARGV[2]  cost; 0 inspects without writing anything
-- ARGV[3…] the algorithm's parameters (see each script)
--
-- Every decision script replies {allowed, remaining, retry_after, reset_after,
-- at}: allowed is 1 or 0, remaining is in cost units, the durations are
-- microseconds and at is the time decided at, in µs since the Unix epoch,
-- exactly as algorithms.Result defines them.
--
-- Numbers are Lua doubles. Every value stays below 2^53, where doubles hold
-- integers exactly; ratewise validates parameters and client times so that
-- they do. Numbers are turned into strings only with string.format, since
-- tostring keeps only 14 significant digits.

local now, grace
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now, grace = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
else
  -- A caller's clock reading can reach Redis late, after a key that it
  -- should still see expired on Redis's clock: keys live a second longer.
  now, grace = tonumber(ARGV[1]), 1000000
end
local cost = tonumber(ARGV[2])
local need = math.max(cost, 1)

-- Integer division is written floor(a / b) or ceil(a / b), and the floored
-- remainder a % b (which Lua defines as a - floor(a / b) * b). All three are
-- exact here: for integers with |a| + b <= 2^53, a / b is at least 1/b away
-- from the next integer, more than half a unit in the last place, so rounding
-- the division never crosses an integer. The algorithms' bounds keep every
-- operand that small.
local floor, ceil, min, max = math.floor, math.ceil, math.min, math.max

local function int(n) return string.format('%.0f', n) end

-- The TTL for a key whose state stops counting us µs after now: in
-- milliseconds, rounded up and at least 1, since Redis expires keys at
-- millisecond resolution, a key must outlive its last effect, and SET … PX 0
-- is an error; plus the grace of client-time mode.
local function ttl_ms(us) return max(1, ceil((us + grace) / 1000)) end

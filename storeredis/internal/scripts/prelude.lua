-- prelude.lua starts every decision script. A script is this prelude, the
-- libraries an algorithm's step requires, the algorithm's step file
-- (<name>.lua, named after its algorithms.Kind) and a driver (decide.lua):
-- see docs/architecture.md. The prelude reads the arguments every algorithm
-- shares and defines exact integer helpers and the TTL rule.
--
-- ARGV[1]  now in microseconds since the Unix epoch, or the empty string to
--          read Redis's own clock (TIME), so that app servers share one
--          timeline; no number selects it, so no client time can
-- ARGV[2]  cost; 0 inspects without writing anything, and -n inspects as a
--          request of cost n would be decided (algorithms.Algorithm.Decide)
-- ARGV[3…] the algorithm's parameters (algorithms.Params), those its kind
--          takes, in this order: limit (or rate count), window (or rate
--          period) in µs, then burst and sub-windows if it takes them
--
-- Every decision script replies {allowed, remaining, retry_after, reset_after,
-- at}: allowed is 1 or 0, remaining is in cost units, the durations are
-- microseconds and at is the time decided at, in µs since the Unix epoch,
-- exactly as algorithms.Result defines them.
--
-- Numbers are Lua doubles. Every value stays below 2^53, where doubles hold
-- integers exactly; ratewise validates parameters and client times so that
-- they do. Numbers are turned into strings only with string.format, since
-- tostring keeps only 14 significant digits: '%d' for the integers a state
-- or a command holds (exact below 2^63, and far cheaper than '%.0f', which
-- formats a double digit by digit).

local now, grace, now_server -- now_server: Redis's TIME, read on its clock
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now, grace = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
  now_server = now
else
  -- A caller's clock reading can reach Redis late, after a key that it
  -- should still see expired on Redis's clock: keys live a second longer.
  now, grace = tonumber(ARGV[1]), 1000000
end
local cost = tonumber(ARGV[2])
-- slack is 0 for a decision; the booking drivers (reserve.lua, lease.lua)
-- set it to the longest wait, in µs, a booking accepts
-- (algorithms.Reserver), which bucket.lua's step reads.
local slack = 0
local need = cost
if cost <= 0 then need = math.max(-cost, 1) end

-- Integer division is written floor(a / b) or ceil(a / b), and the floored
-- remainder a % b (which Lua defines as a - floor(a / b) * b). All three are
-- exact here: for integers with |a| + b <= 2^53, a / b is at least 1/b away
-- from the next integer, more than half a unit in the last place, so rounding
-- the division never crosses an integer. The algorithms' bounds keep every
-- operand that small.
local floor, ceil, min, max = math.floor, math.ceil, math.min, math.max

-- The TTL for a key whose state stops counting us µs after now: in
-- milliseconds, rounded up and at least 1, since Redis expires keys at
-- millisecond resolution, a key must outlive its last effect, and SET … PX 0
-- is an error; plus the grace of client-time mode; plus one millisecond,
-- since Redis counts a TTL from its clock in whole milliseconds, read when
-- the script started (from Redis 7; when the command ran, before), which
-- may be up to a millisecond before the TIME the state counts from: without
-- it, a key on Redis's clock vanished up to a millisecond before its state
-- stopped counting, and a request in that millisecond found no state. It
-- is the decimal string the command takes.
local function ttl_ms(us) return string.format('%d', max(1, ceil((us + grace) / 1000)) + 1) end

-- An algorithm's file, <name>.lua, defines three locals, <name>_read,
-- <name>_step and <name>_write:
--
--   read(key)                        the key's state, or nil/false for none
--   step(key, state, limit, window, ...)  (... the burst or sub-windows)
--                                    -> allowed, remaining, retry_after,
--                                       reset_after, at, new, aux...
--   write(key, new, aux...)          stores what the step returned
--
-- step is the decision: it writes nothing, and returns new (with aux) when
-- the key must change (with up to three more values for write), nil when
-- nothing is written. now, cost and need are
-- the prelude's. A driver reads, steps and writes. A fourth local,
-- <name>_refund(key, state, at, limit, window, ...), gives back cost units
-- charged at time at (algorithms.Algorithm.Refund): for a state in one
-- string it returns the new string, or nil when nothing changes, and may
-- return after it the µs after now the key must be kept at least; otherwise it
-- writes the key itself and returns true when it changed it. A state held in one
-- string leaves read and write nil: the driver then GETs it, and SETs new
-- with a TTL of aux µs. They are plain locals, not a table, since a script
-- builds every table and closure it defines again on each call.

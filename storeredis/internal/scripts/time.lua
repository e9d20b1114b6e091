-- time.lua: Redis's clock, read inside a script as decisions read it:
-- {seconds, microseconds} since the Unix epoch. It writes nothing.
local t = redis.call('TIME') return {tonumber(t[1]), tonumber(t[2])}

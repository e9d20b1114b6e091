-- gcra.lua: the generic cell rate algorithm (algorithms.GCRA), as redis-cell
-- runs it: the step of bucket.lua, whose state is the theoretical arrival
-- time.
--
-- ARGV[3…7] burst, rate count, rate period (µs), k, p (see bucket.lua)

return bucket_step(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))

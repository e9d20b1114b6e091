-- token_bucket.lua: the token bucket (algorithms.TokenBucket), the step of
-- bucket.lua with the capacity as the burst. Its state is the time at which
-- the bucket is full again, which is the same fact as a fill level.
--
-- ARGV[3…7] capacity, refill count, refill period (µs), k, p (see bucket.lua)

return bucket_step(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))

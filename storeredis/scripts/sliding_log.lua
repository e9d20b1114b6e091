-- sliding_log.lua: the exact sliding log on a sorted set (algorithms.SlidingLog),
-- the step of log.lua with timestamps to the microsecond.
--
-- ARGV[3]  limit
-- ARGV[4]  window (µs)
-- Reply    {allowed, remaining, retry_after µs, reset_after µs, at µs}

return log_step(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), 1)

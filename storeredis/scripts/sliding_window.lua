-- sliding_window.lua: the sliding window counter (algorithms.SlidingWindow),
-- the step of log.lua with timestamps rounded down to their sub-window, one
-- record per sub-window that admitted something.
--
-- ARGV[3]  limit
-- ARGV[4]  window (µs)
-- ARGV[5]  sub_windows; window is a whole multiple of it
-- Reply    {allowed, remaining, retry_after µs, reset_after µs, at µs}

local window = tonumber(ARGV[4])
return log_step(KEYS[1], tonumber(ARGV[3]), window, window / tonumber(ARGV[5]))

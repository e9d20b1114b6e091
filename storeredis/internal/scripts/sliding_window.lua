-- sliding_window.lua: the sliding window counter (algorithms.SlidingWindow):
-- the step of log.lua with timestamps rounded down to their sub-window, one
-- record per sub-window that admitted something.
-- requires: log.lua

local sliding_window_read, sliding_window_step, sliding_window_write, sliding_window_refund = log_read, log_step, log_write, log_refund

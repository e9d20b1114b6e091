-- sliding_log.lua: the exact sliding log on a sorted set
-- (algorithms.SlidingLog): the step of log.lua with timestamps to the
-- microsecond (sub-windows 0).
-- requires: log.lua

local sliding_log_read, sliding_log_step, sliding_log_write, sliding_log_refund = log_read, log_step, log_write, log_refund

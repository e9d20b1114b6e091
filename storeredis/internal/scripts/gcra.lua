-- gcra.lua: the generic cell rate algorithm (algorithms.GCRA), as redis-cell
-- runs it: the step of bucket.lua, whose state is the theoretical arrival
-- time.
-- requires: bucket.lua
-- state: one string

local gcra_step, gcra_refund = bucket_step, bucket_refund
local gcra_read, gcra_write -- a string: GET and SET

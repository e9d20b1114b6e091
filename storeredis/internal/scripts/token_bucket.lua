-- token_bucket.lua: the token bucket (algorithms.TokenBucket): the step of
-- bucket.lua with the capacity as the burst. Its state is the time at which
-- the bucket is full again, which is the same fact as a fill level.
-- requires: bucket.lua
-- state: one string

local token_bucket_step, token_bucket_refund = bucket_step, bucket_refund
local token_bucket_read, token_bucket_write -- a string: GET and SET

-- reset.lua: a reset (store.Store's Reset). It deletes KEYS[1], the state,
-- with UNLINK, so that even a large sorted set is freed in the background.
--
-- KEYS[2]  if given, the reset's once key (see once.lua): the reset is then
--          applied only if the key does not exist, and the key is kept for
--          as long as the state it deleted would have counted, and at least
--          ARGV[1] ms, how long go-redis may resend it
-- Reply    1 if the reset was applied, 0 if its once key says it was before
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local left = redis.call('PTTL', KEYS[1])
redis.call('UNLINK', KEYS[1])
if KEYS[2] then redis.call('SET', KEYS[2], '1', 'PX', math.max(left, tonumber(ARGV[1]), 1)) end
return 1

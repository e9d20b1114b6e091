-- reset.lua: a reset (store.Store's Reset). It deletes KEYS[1], the state,
-- with UNLINK, so that even a large sorted set is freed in the background,
-- or puts its mark back in its place.
--
-- KEYS[2]  the state's mark (lease.lua): if it exists, the reset writes it
--          as the state, with the mark's TTL, instead of deleting the state
-- KEYS[3]  if given, the reset's once key (see once.lua): the reset is then
--          applied only if the key does not exist, and the key is kept for
--          as long as the state it deleted would have counted, and at least
--          ARGV[1] ms, how long go-redis may resend it
-- Reply    1 if the reset was applied, 0 if its once key says it was before
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local left = redis.call('PTTL', KEYS[1])
local marked = redis.call('GET', KEYS[2])
local ttl = 0
if marked then ttl = redis.call('PTTL', KEYS[2]) end
if ttl > 0 then
  redis.call('SET', KEYS[1], marked, 'PX', ttl)
  left = math.max(left, ttl)
else
  redis.call('UNLINK', KEYS[1])
end
if KEYS[3] then redis.call('SET', KEYS[3], '1', 'PX', math.max(left, tonumber(ARGV[1]), 1)) end
return 1

-- ttl.lua: KEYS[1]'s remaining time to live in ms, as PTTL replies: -2 when
-- the key does not exist, -1 when it has no expiry. It writes nothing.
return redis.call('PTTL', KEYS[1])

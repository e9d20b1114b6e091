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
--          (a state with records keeps them, see rec.lua)
-- Reply    1 if the reset was applied, 0 if its once key says it was before
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local left = redis.call('PTTL', KEYS[1])
local marked = redis.call('GET', KEYS[2])
local ttl = 0
if marked then ttl = redis.call('PTTL', KEYS[2]) end
-- A state held in one string may carry writers' records (rec.lua) before
-- it, which the reset keeps, for as long as the key had left to live, with
-- the mark as their state or none.
local count, records = nil, ''
if left > 0 then
  local v = redis.pcall('GET', KEYS[1]) -- an error for a state that is no string
  if type(v) == 'string' and string.byte(v, 1) == 255 and #v >= 10 then
    local pos = 11
    for _ = 1, string.byte(v, 2) * 256 + string.byte(v, 3) do
      local plen = string.byte(v, pos + 29) or 255
      if plen == 255 then plen = 0 end
      pos = pos + 30 + plen
    end
    count, records = string.sub(v, 1, 3), string.sub(v, 11, pos - 1)
  end
end
-- expires is the 7-byte big-endian time the state expires, in ms on Redis's
-- clock (0 for none).
local function expires(ms)
  local b = {}
  for j = 7, 1, -1 do
    b[j] = ms % 256
    ms = (ms - b[j]) / 256
  end
  return string.char(unpack(b))
end
if ttl > 0 then
  if count then
    local t = redis.call('TIME')
    local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
    redis.call('SET', KEYS[1], count .. expires(ms) .. records .. marked, 'PX', math.max(ttl, left))
  else
    redis.call('SET', KEYS[1], marked, 'PX', ttl)
  end
  left = math.max(left, ttl)
elseif count then
  redis.call('SET', KEYS[1], count .. expires(0) .. records, 'PX', left)
else
  redis.call('UNLINK', KEYS[1])
end
if KEYS[3] then redis.call('SET', KEYS[3], '1', 'PX', math.max(left, tonumber(ARGV[1]), 1)) end
return 1

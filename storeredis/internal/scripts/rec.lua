-- rec.lua: writers' records, kept in a string state's own value, so that a
-- command go-redis sends again is applied once without a key of its own
-- (see storeredis's writers.go). Every driver reads and writes a state held
-- in one string (a kind whose read and write are nil) with str_get and
-- str_set, which keep the records a value holds.
--
-- A value without records is the state alone. A value with records is the
-- byte 255 (no state's first byte: binary states start below 32, text ones
-- with a digit), their count in 2 bytes, the time the state expires (ms on
-- Redis's clock, 7 bytes, 0 for no state), the records, then the state, or
-- nothing for none. Such a key lives as long as its latest record, and its
-- state no longer than its own TTL would have kept it: a state read after
-- its time is no state. A record is 30 bytes and the state it follows:
--
--   writer  15  the store's 8 random bytes, then the call's 7-byte sequence
--               number: a store numbers its calls in the order it sends
--               them, and sends a key's next call only after the last has
--               returned, so a key's records hold one per store
--   until    7  µs on Redis's clock until which an attempt of the call may
--               still arrive (the record is kept that long, and pruned after)
--   at       7  the time the call decided at, µs (0 in client-time mode,
--               where each decision's ARGV carries it)
--   plen     1  the length of the state the call found, 255 for none
--   pre   plen  that state
--
-- Numbers are big-endian, as pack.lua writes them.
-- requires: pack.lua

-- rec_of holds each key's records, as str_get read them: a list of record
-- strings, or nil for none; rec_until the time its state expires, in ms.
local rec_of, rec_until = {}, {}

-- rec_clock is Redis's clock in µs: the prelude's TIME on Redis's clock,
-- and one TIME per script in client-time mode, where records need it.
local rec_server
local function rec_clock()
  if grace == 0 then return now_server end
  if not rec_server then
    local t = redis.call('TIME')
    rec_server = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return rec_server
end

-- str_get returns the state held at key, false for none, and keeps the
-- records of its value in rec_of.
local function str_get(key)
  local v = redis.call('GET', key)
  rec_of[key] = nil
  if not v or string.byte(v, 1) ~= 255 then return v end
  local n = string.byte(v, 2) * 256 + string.byte(v, 3)
  local recs, pos = {}, 11
  local expires = bin_unpack('>I7', v, 4)
  for i = 1, n do
    local plen = string.byte(v, pos + 29)
    local size = 30
    if plen ~= 255 then size = size + plen end
    if pos + size - 1 > #v then error('ratewise: malformed records in ' .. key) end
    recs[i] = string.sub(v, pos, pos + size - 1)
    pos = pos + size
  end
  rec_of[key], rec_until[key] = recs, expires
  if pos > #v or expires * 1000 <= rec_clock() then return false end
  return string.sub(v, pos)
end

-- rec_find returns key's record of the store whose 8 bytes are inst, or
-- nil, and its sequence number.
local function rec_find(key, inst)
  local recs = rec_of[key]
  if not recs then return nil end
  for i = 1, #recs do
    local r = recs[i]
    if string.sub(r, 1, 8) == inst then return r, bin_unpack('>I7', r, 9) end
  end
  return nil
end

-- rec_pre returns what a record keeps: the state its call found (false for
-- none) and the time it decided at.
local function rec_pre(r)
  local at = bin_unpack('>I7', r, 23)
  if string.byte(r, 30) == 255 then return false, at end
  return string.sub(r, 31), at
end

-- rec_new returns the record of writer (15 bytes), kept life µs, of a call
-- that decided at at and found state pre.
local function rec_new(writer, life, at, pre)
  local plen = 255
  if pre then
    plen = #pre
    if plen > 254 then error('ratewise: a state too long to record') end
  end
  return writer .. bin_pack('>I7I7', rec_clock() + life, at) .. string.char(plen) .. (pre or '')
end

-- str_set stores state new (false for none) at key for us µs, as SET … PX
-- did, with the records of its value that still count (those of other
-- stores, when mine is given) and mine, a record or nil. A value with
-- records lives as long as the latest of them.
local function str_set(key, new, us, mine)
  local recs = rec_of[key]
  if not recs and not mine then
    if new then redis.call('SET', key, new, 'PX', ttl_ms(us)) else redis.call('UNLINK', key) end
    return
  end
  local t, keep, last = rec_clock(), {}, 0
  local inst = mine and string.sub(mine, 1, 8)
  if recs then
    for i = 1, #recs do
      local r = recs[i]
      local u = bin_unpack('>I7', r, 16)
      if u > t and string.sub(r, 1, 8) ~= inst then
        keep[#keep + 1] = r
        last = max(last, u)
      end
    end
  end
  if mine then
    keep[#keep + 1] = mine
    last = max(last, (bin_unpack('>I7', mine, 16)))
  end
  local n = #keep
  if n == 0 then
    rec_of[key] = nil
    if new then redis.call('SET', key, new, 'PX', ttl_ms(us)) else redis.call('UNLINK', key) end
    return
  end
  if n > 65535 then error('ratewise: more than 65535 stores write ' .. key) end
  local expires = 0
  if new then expires = floor(t / 1000) + tonumber(ttl_ms(us)) end
  rec_of[key], rec_until[key] = keep, expires
  local v = '\255' .. string.char(floor(n / 256), n % 256) .. bin_pack('>I7', expires) .. table.concat(keep) .. (new or '')
  redis.call('SET', key, v, 'PX', ttl_ms(max(us or 0, last - t)))
end

-- str_prune rewrites key's value without its records that no longer count,
-- if it holds any: a state read and not written keeps none past its time.
local function str_prune(key, state)
  local recs = rec_of[key]
  if not recs then return end
  local t = rec_clock()
  for i = 1, #recs do
    if bin_unpack('>I7', recs[i], 16) <= t then
      -- The state keeps the time it had left.
      local left = rec_until[key] * 1000 - t
      if state and left > 0 then str_set(key, state, left - 1000 - grace) else str_set(key, false) end
      return
    end
  end
end

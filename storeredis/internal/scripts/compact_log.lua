-- compact_log.lua: the exact sliding log in a ring of timestamps
-- (algorithms.CompactLog): it decides exactly as sliding_log.lua does.
--
-- State: one string. Bytes 0…31 are the header, four 8-byte big-endian
-- integers: the ring's capacity in slots, the slot of the oldest timestamp
-- stored (head), how many are stored (len, some may have expired) and the
-- latest time (µs) a request was admitted at, or denied at with a cost
-- above 1 (0 for none). Slot i is bytes 32+8i…39+8i: one timestamp (µs) per
-- unit of admitted cost, oldest at head. A step reads the header and a few
-- slots with GETRANGE, never the whole string; an admission writes its
-- timestamps and the header with SETRANGE, or, when the ring must grow (by
-- half, up to the limit), the whole string with SET … PX. The header and
-- the slots are read and written with struct (pack.lua).

-- requires: pack.lua

-- Offsets go to redis.call as strings: Redis 7.0 turns a number argument
-- into one more slowly than string.format does.
local format = string.format

-- An integer below 2^53 from the 8 bytes of s at i, big-endian.
local function u64(s, i) return (bin_unpack('>I8', s, i)) end

-- The 8 bytes of an integer 0 <= x < 2^53, big-endian.
local function p64(x) return bin_pack('>I8', x) end

-- compact_log_read returns the key's header, or nil for no key or a string
-- that is not a ring of the size its header says (which an admission then
-- overwrites).
local function compact_log_read(key)
  local hdr = redis.call('GETRANGE', key, '0', '31')
  if #hdr ~= 32 or redis.call('STRLEN', key) ~= 32 + 8 * u64(hdr, 1) then return nil end
  return hdr
end

-- The ring's header fields; a header that does not hold together reads as
-- an empty ring with no latest time.
local function compact_log_header(hdr)
  if not hdr then return 0, 0, 0, 0 end
  local size, head, len, latest = bin_unpack('>I8I8I8I8', hdr)
  if head >= size or len > size or latest > 4503599627370495 then return 0, 0, 0, 0 end
  return size, head, len, latest
end

-- The i-th timestamp stored, oldest first.
local function compact_log_at(key, size, head, i)
  local off = 32 + 8 * ((head + i) % size)
  return u64(redis.call('GETRANGE', key, format('%d', off), format('%d', off + 7)), 1)
end

-- How many stored timestamps are at or before expired (a prefix): a gallop
-- from the oldest, then a bisection.
local function compact_log_first(key, size, head, len, expired)
  if len == 0 or compact_log_at(key, size, head, 0) > expired then return 0 end
  local lo, hi, step = 0, len, 1
  while lo + step < len do
    if compact_log_at(key, size, head, lo + step) > expired then
      hi = lo + step
      break
    end
    lo = lo + step
    step = step * 2
  end
  while hi - lo > 1 do
    local mid = floor((lo + hi) / 2)
    if compact_log_at(key, size, head, mid) > expired then hi = mid else lo = mid end
  end
  return hi
end

local function compact_log_step(key, hdr, limit, window)
  local size, head, len, latest = compact_log_header(hdr)
  local eff = max(now, latest)
  local first = compact_log_first(key, size, head, len, eff - window)
  local count = len - first
  local allowed, retry, reset = 0, 0, 0
  if count + need > limit then
    retry = compact_log_at(key, size, head, first + count + need - limit - 1) + window - now
  else
    allowed = 1
  end
  -- What to write: new is the header, or the whole string when the ring
  -- grows; pos and units the slot of the first new timestamp and the new
  -- timestamps' bytes; ttl the key's TTL after an admission.
  local new, ttl, pos, units
  if cost > 0 then
    if size > 0 then head = (head + first) % size end
    len = count
    if allowed == 1 then
      units = string.rep(p64(eff), cost)
      if len + cost > size then
        -- Grow by half, at least to what it must hold, at most to the limit.
        local grown = min(max(limit, len + cost), max(len + cost, size + floor(size / 2), 8))
        local live = ''
        if len > 0 then
          local from, to = 32 + 8 * head, 32 + 8 * (head + len) - 1
          if head + len <= size then
            live = redis.call('GETRANGE', key, from, to)
          else
            live = redis.call('GETRANGE', key, from, 32 + 8 * size - 1) ..
              redis.call('GETRANGE', key, 32, 32 + 8 * (head + len - size) - 1)
          end
        end
        units = live .. units .. string.rep('\0', 8 * (grown - len - cost))
        size, head, pos = grown, 0, nil
      else
        pos = (head + len) % size
      end
      len = len + cost
      count = count + cost
    end
    if allowed == 1 or cost > 1 then latest = eff end
    if allowed == 1 or cost > 1 or first > 0 then
      new = bin_pack('>I8I8I8I8', size, head, len, latest)
      if allowed == 1 and not pos then new, units = new .. units, nil end
    end
  end
  if allowed == 1 and cost > 0 then
    -- The newest timestamp is the admission's own, not written yet.
    reset = eff + window - now
    ttl = reset
  elseif count > 0 then
    reset = compact_log_at(key, size, head, len - 1) + window - now
  end
  return allowed, max(0, limit - count), retry, reset, eff, new, ttl, pos, units
end

-- compact_log_write applies what the step returned: the whole string with
-- its TTL, or the header and the new timestamps (in at most two pieces, when they wrap
-- round the ring), and the TTL after an admission.
local function compact_log_write(key, new, ttl, pos, units)
  if #new > 32 then
    -- Only an admission writes the whole string: with its TTL, at once.
    redis.call('SET', key, new, 'PX', ttl_ms(ttl))
    return
  end
  redis.call('SETRANGE', key, '0', new)
  if units then
    local size = u64(new, 1)
    local n = #units / 8
    local part = min(n, size - pos)
    redis.call('SETRANGE', key, format('%d', 32 + 8 * pos), string.sub(units, 1, 8 * part))
    if n > part then redis.call('SETRANGE', key, '32', string.sub(units, 8 * part + 1)) end
  end
  if ttl then redis.call('PEXPIRE', key, ttl_ms(ttl)) end
end

-- compact_log_refund gives back cost units charged at time at, as
-- algorithms.CompactLog.Refund does; it writes the header and returns true
-- when it changed the key.
local function compact_log_refund(key, hdr, at, limit, window)
  local size, head, len, latest = compact_log_header(hdr)
  local eff = max(now, latest)
  local first = compact_log_first(key, size, head, len, eff - window)
  local count = len - first
  if at <= eff - window or count == 0 then return nil end
  local k
  if compact_log_at(key, size, head, len - 1) == at then
    -- The units stamped as the newest, found by bisection.
    local lo, hi = first - 1, len - 1
    while hi - lo > 1 do
      local mid = floor((lo + hi) / 2)
      if compact_log_at(key, size, head, mid) == at then hi = mid else lo = mid end
    end
    k = min(cost, len - hi)
    head = (head + first) % size
  else
    k = min(cost, count)
    head = (head + first + k) % size
  end
  redis.call('SETRANGE', key, '0', bin_pack('>I8I8I8I8', size, head, count - k, eff))
  return true
end

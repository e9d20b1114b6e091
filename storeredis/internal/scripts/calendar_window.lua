-- calendar_window.lua: the quota per calendar period
-- (algorithms.CalendarWindow), the fixed window's step on periods of the
-- calendar.
--
-- Parameters: the limit; b, the boundary between two periods nearest the
-- caller's now (µs); and the lengths of the period that ends at b and of
-- the one that starts there, in whole seconds, packed as before * 2^22 +
-- after (internal/algo's CalendarParams). Lua knows no time zones: the
-- caller finds the periods, and the step finds among those two the one its
-- own now is in, so that on Redis's clock it counts in Redis's period. A
-- now in neither, a clock more than half a period from the caller's, is an
-- error that names it (internal/algo's CalendarSkew reads it), rather than
-- a count in the wrong period: the store sends the request again with the
-- periods about that now.
--
-- State: a string of three 7-byte fields (pack.lua), 21 bytes: the start
-- and end of the period being counted (µs) and the cost admitted in it. An
-- admission writes it with a TTL until its period ends. A string of another
-- length, or a number at or past 2^53 (which no decision writes), is read
-- as no state.
-- requires: pack.lua
-- state: one string

-- calendar_window_parse returns the start, end and count raw holds, or nil.
local function calendar_window_parse(raw)
  if #raw ~= 21 then return nil end
  local s, e, c = bin_unpack('>I7I7I7', raw)
  if s < 9007199254740992 and e < 9007199254740992 and c < 9007199254740992 then return s, e, c end
  return nil
end

-- calendar_window_period returns the period [start, end) of the two about
-- b that t is in, or raises an error.
local function calendar_window_period(t, b, packed)
  local after = packed % 4194304
  local before = (packed - after) / 4194304
  before, after = before * 1000000, after * 1000000
  if t >= b and t < b + after then return b, b + after end
  if t < b and t >= b - before then return b - before, b end
  error(string.format('calendar_window: the store\'s clock reads %.0fus, more than half a period from %.0fus, ' ..
    'the boundary nearest the caller\'s', t, b))
end

local function calendar_window_step(_, raw, limit, b, packed)
  local start, stop = calendar_window_period(now, b, packed)
  local at, count = now, 0
  if raw then
    local s, e, c = calendar_window_parse(raw)
    if s then
      -- A period later than now's means the clock stepped back: keep
      -- counting in it, so nothing extra gets through.
      if s > start then start, stop, at = s, e, s end
      if s == start then count = c end
    end
  end

  local allowed, retry, reset, new = 0, 0, 0, nil
  if count + need <= limit then
    allowed = 1
    if cost > 0 then
      count = count + cost
      new = bin_pack('>I7I7I7', start, stop, count)
    end
  else
    retry = stop - now
  end
  if count > 0 then reset = stop - now end
  return allowed, max(0, limit - count), retry, reset, at, new, stop - now
end

-- calendar_window_refund takes cost off the count, not below zero, when at
-- is in the key's period and that period is not over.
local function calendar_window_refund(_, raw, at)
  if not raw then return nil end
  local s, e, c = calendar_window_parse(raw)
  if not s or c <= 0 or at < s or at >= e or now >= e then return nil end
  return bin_pack('>I7I7I7', s, e, c - min(cost, c))
end

local calendar_window_read, calendar_window_write -- a string: GET and SET

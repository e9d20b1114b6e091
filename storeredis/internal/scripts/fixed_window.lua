-- fixed_window.lua: the fixed window counter (algorithms.FixedWindow).
--
-- State: a string of two 7-byte fields (pack.lua), 14 bytes: the start of
-- the window being counted (µs) and the cost admitted in it. An admission
-- writes it with a TTL until its window ends. The layout's version is in the
-- key (storeredis's Key), so a ratewise that wrote "start count" in decimal,
-- before it, never reads this one, nor this one its; a string of another
-- length is read as that text if it is such text, and otherwise, like a
-- number at or past 2^53 (which no decision writes), as no state.
-- layout: 3 (2 before a value could carry writers' records, rec.lua)
-- requires: pack.lua
-- state: one string

-- fixed_window_parse returns the start and count raw holds, or nil.
local function fixed_window_parse(raw)
  local s, c
  if #raw == 14 then
    s, c = bin_unpack('>I7I7', raw)
  else
    s, c = string.match(raw, '^(%d+) (%d+)$')
    s, c = tonumber(s), tonumber(c)
  end
  if s and c and s < 9007199254740992 and c < 9007199254740992 then return s, c end
  return nil
end

local function fixed_window_step(_, raw, limit, window)
  local start, at = now - now % window, now
  local count = 0
  if raw then
    local s, c = fixed_window_parse(raw)
    if s then
      -- A window later than now's means the clock stepped back: keep
      -- counting in it, so nothing extra gets through.
      if s > start then start, at = s, s end
      if s == start then count = c end
    end
  end

  local allowed, retry, reset, new = 0, 0, 0, nil
  if count + need <= limit then
    allowed = 1
    if cost > 0 then
      count = count + cost
      new = bin_pack('>I7I7', start, count)
    end
  else
    retry = start + window - now
  end
  if count > 0 then reset = start + window - now end
  return allowed, max(0, limit - count), retry, reset, at, new, start + window - now
end

-- fixed_window_refund takes cost off the count, not below zero, when at is
-- in the key's window (algorithms.FixedWindow.Refund).
local function fixed_window_refund(_, raw, at, limit, window)
  if not raw then return nil end
  local s, c = fixed_window_parse(raw)
  -- The charge's window must be the key's, and not over.
  if not s or not c or c <= 0 or s ~= at - at % window or s + window <= now - now % window then return nil end
  return bin_pack('>I7I7', s, c - min(cost, c))
end

local fixed_window_read, fixed_window_write -- a string: GET and SET

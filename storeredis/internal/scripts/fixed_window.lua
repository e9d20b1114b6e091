-- fixed_window.lua: the fixed window counter (algorithms.FixedWindow).
--
-- State: a string "start count": the start of the window being counted (µs)
-- and the cost admitted in it. An admission writes it with a TTL until its
-- window ends.

local function fixed_window_step(_, raw, limit, window)
  local start, at = now - now % window, now
  local count = 0
  if raw then
    local s, c = string.match(raw, '^(%d+) (%d+)$')
    s, c = tonumber(s), tonumber(c)
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
      new = string.format('%d %d', start, count)
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
  local s, c = string.match(raw, '^(%d+) (%d+)$')
  s, c = tonumber(s), tonumber(c)
  -- The charge's window must be the key's, and not over.
  if not s or not c or c <= 0 or s ~= at - at % window or s + window <= now - now % window then return nil end
  return string.format('%d %d', s, c - min(cost, c))
end

local fixed_window_read, fixed_window_write -- a string: GET and SET

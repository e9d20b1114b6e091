-- log.lua: the step the sliding log and the sliding window counter share
-- (algorithms/log.go): a sliding log whose timestamps are rounded down to a
-- multiple of a quantum, one record per admitted request (or sub-window).
--
-- State: a sorted set:
--          records  score: the record's time in µs since the Unix epoch
--                   member: the cost admitted before it (its start), in
--                   decimal, modulo 2^52; starts only grow, so the members
--                   of the records that count are unique (an expired record
--                   not yet removed may share one with a new record, which
--                   then replaces it); a record's cost is the next start
--                   minus its own
--          'T'      score: -1 minus the cost admitted up to and including the
--                   newest record, modulo 2^52
--          'L'      score: -1 minus the latest time (µs) a request was
--                   admitted at, or denied at with a cost above 1
--          The two metas score below 0 and records at or above it, so the
--          metas hold the lowest ranks and ZCOUNT key 0 x counts records only.
--
-- The set is too large to read whole, so log_read returns only its metas
-- (one ZRANGE of the two lowest members), and the step reads records by
-- key, never writing: it counts them with ZCARD
-- and ZCOUNT and reads the oldest and the newest still counting (two
-- ZRANGEs); a denied request finds the record it must wait for by a galloping
-- search over ranks, one ZRANGE for a request of cost 1 at its limit. The
-- step returns what to write as a plan, which log_write applies: a request
-- that consumes removes up to 1,000 expired records (ZREMRANGEBYRANK), and an
-- admission records itself and the metas with one ZADD and a PEXPIRE. Every
-- command is O(log n), so a decision takes the same time whatever the cost
-- and however many records the key holds.

-- An integer as the decimal string a command takes: format('%d', n), exact
-- below 2^63 and far cheaper than '%.0f' (see prelude.lua). Ranks too go to
-- redis.call as strings: Redis 7.0 turns a number argument into one more
-- slowly than format does.
local format = string.format

local M = 4503599627370496 -- 2^52
local TRIM = 1000

-- A score as a number. Redis replies with plain digits; miniredis writes
-- some scores as "2e+15", which gopher-lua's tonumber refuses without a
-- decimal point.
local function score(s)
  return tonumber(s) or tonumber((string.gsub(s, 'e', '.0e', 1)))
end

-- log_read returns the state of key's log as far as a step reads it at
-- once: its two lowest members with their scores, where the metas are.
local function log_read(key)
  return redis.call('ZRANGE', key, '0', '1', 'WITHSCORES')
end

-- log_live reads the log at key, whose lowest members are low, for a
-- decision now: it returns the total and the latest time from the metas (nil
-- for none), the number of metas, the decision time eff, the stamp it
-- records at (eff rounded down to a multiple of quantum), how many records
-- still count, how many expired ones come before them, and the rank of the
-- oldest record still counting.
local function log_live(key, low, window, quantum)
  local total, latest, metas = 0, nil, 0
  for i = 1, #low, 2 do
    if low[i] == 'T' then
      total, metas = (-1 - score(low[i + 1])) % M, metas + 1
    elseif low[i] == 'L' then
      -- Capped below 2^52 µs, like every time a decision writes.
      latest, metas = min(-1 - score(low[i + 1]), 4503599627370495), metas + 1
    end
  end
  local eff = now
  if latest and latest > eff then eff = latest end
  local stamp = eff - eff % quantum

  -- Records stamped at or before stamp-window have expired; they are the
  -- lowest records by score.
  local records = redis.call('ZCARD', key) - metas
  local expired = 0
  if records > 0 and stamp - window >= 0 then expired = redis.call('ZCOUNT', key, '0', format('%d', stamp - window)) end
  return total, latest, metas, eff, stamp, records - expired, expired, metas + expired
end

-- A member that is not a number was written by something else: it reads
-- as a start of 0, which keeps every result in range.
local function log_start(key, rank)
  local r = format('%d', rank)
  return tonumber(redis.call('ZRANGE', key, r, r)[1]) or 0
end
local function log_time(key, rank)
  local r = format('%d', rank)
  return score(redis.call('ZRANGE', key, r, r, 'WITHSCORES')[2])
end

-- log_step decides on the log at key, whose lowest members are low; sub is
-- nil for timestamps to the microsecond (the sliding log), or the number of
-- sub-windows to round them down to (the sliding window counter).
local function log_step(key, low, limit, window, sub)
  local quantum = 1
  if sub then quantum = window / sub end
  local total, latest, metas, eff, stamp, live, expired, first = log_live(key, low, window, quantum)

  -- The oldest record still counting, its start and time at once; it is
  -- also the newest when it is the only one.
  local count, base, oldest, newest = 0, 0, nil, nil
  if live > 0 then
    local f = format('%d', first)
    local r = redis.call('ZRANGE', key, f, f, 'WITHSCORES')
    base, oldest = tonumber(r[1]) or 0, score(r[2])
    count = (total - base) % M
    if live == 1 then newest = oldest else newest = score(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]) end
  end

  local allowed, retry, reset, add = 0, 0, 0, nil
  if count + need > limit then
    -- The (count+need-limit)-th oldest unit still counting must expire
    -- first; it lies in the last record starting at or before it. The
    -- oldest unit (a request of cost 1 at its limit) lies in the oldest
    -- record, since every record holds at least one unit; otherwise the
    -- search gallops from the oldest record, then bisects: O(log n)
    -- commands.
    local target = count + need - limit - 1
    local lo, hi, step = first, first + live - 1, 1
    if target == 0 then hi = lo end
    while lo < hi do
      local probe = min(lo + step, hi)
      if (log_start(key, probe) - base) % M <= target then
        lo, step = probe, step * 2
      else
        hi = probe - 1
        break
      end
    end
    while lo < hi do
      local mid = floor((lo + hi + 1) / 2)
      if (log_start(key, mid) - base) % M <= target then lo = mid else hi = mid - 1 end
    end
    if lo == first then retry = oldest + window - now else retry = log_time(key, lo) + window - now end
  else
    allowed = 1
    if cost > 0 then
      add = {}
      if newest ~= stamp then
        add = {format('%d', stamp), format('%d', total)}
      end
      -- Otherwise the newest record has the same stamp and absorbs the cost.
      total = (total + cost) % M
      count = count + cost
      newest = stamp
      add[#add + 1] = format('%d', -1 - total)
      add[#add + 1] = 'T'
      add[#add + 1] = format('%d', -1 - eff)
      add[#add + 1] = 'L'
    end
  end
  if count > 0 then reset = newest + window - now end
  -- What to write: new is the ZADD arguments, or true when only expired
  -- records go; then the TTL to set (after an admission), and the ranks of
  -- the expired records to remove.
  local new, ttl, trim = nil, nil, 0
  if cost > 0 then
    -- A denial of cost 1 leaves the latest time (see
    -- algorithms.Algorithm.Decide).
    if allowed == 0 and cost > 1 and (not latest or eff > latest) then add = {format('%d', -1 - eff), 'L'} end
    if allowed == 1 then ttl = reset end
    trim = min(expired, TRIM)
    new = add or (trim > 0)
  end
  return allowed, max(0, limit - count), retry, reset, eff, new, ttl, metas, metas + trim - 1
end

-- log_write applies what log_step returned: expired records (ranks from..to)
-- removed first, so that a new record never meets one of their members, then
-- the new record and metas, and the key's TTL when a request was admitted.
local function log_write(key, new, ttl, from, to)
  if to >= from then redis.call('ZREMRANGEBYRANK', key, format('%d', from), format('%d', to)) end
  if new ~= true then redis.call('ZADD', key, unpack(new)) end
  if ttl then redis.call('PEXPIRE', key, ttl_ms(ttl)) end
end

-- log_refund gives back cost units charged at time at, if that request
-- still counts (algorithms.SlidingLog.Refund): off the newest record when
-- the request is in it, otherwise the oldest units counting. It writes the
-- key and returns true when it changed it.
local function log_refund(key, low, at, limit, window, sub)
  local quantum = 1
  if sub then quantum = window / sub end
  local total, _, _, eff, stamp, live, _, first = log_live(key, low, window, quantum)
  local charged = at - at % quantum
  if charged <= stamp - window or live <= 0 then return nil end
  local newest = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  if score(newest[2]) == charged then
    -- The refunded request is in the newest record: its units come off.
    local c = (total - (tonumber(newest[1]) or 0)) % M
    local k = min(cost, c)
    if k <= 0 then return nil end
    total = (total - k) % M
    if k == c then redis.call('ZREM', key, newest[1]) end
    -- The key's time moves on to eff, as an admission's does.
    redis.call('ZADD', key, format('%d', -1 - total), 'T', format('%d', -1 - eff), 'L')
    return true
  end
  -- The oldest units counting go: units are numbered from the oldest
  -- record's start, and the first one kept, the k-th, lies in the last
  -- record that starts at or before it.
  local base = log_start(key, first)
  local count = (total - base) % M
  local k = min(cost, count)
  if k <= 0 then return nil end
  redis.call('ZADD', key, format('%d', -1 - eff), 'L')
  local last = first + live - 1
  if k == count then
    redis.call('ZREMRANGEBYRANK', key, format('%d', first), format('%d', last))
    return true
  end
  local lo, hi = first, last
  while lo < hi do
    local mid = floor((lo + hi + 1) / 2)
    if (log_start(key, mid) - base) % M <= k then lo = mid else hi = mid - 1 end
  end
  local r = format('%d', lo)
  local kept = redis.call('ZRANGE', key, r, r, 'WITHSCORES')
  if lo > first then redis.call('ZREMRANGEBYRANK', key, format('%d', first), format('%d', lo - 1)) end
  if ((tonumber(kept[1]) or 0) - base) % M ~= k then
    redis.call('ZREM', key, kept[1])
    redis.call('ZADD', key, kept[2], format('%d', (base + k) % M))
  end
  return true
end

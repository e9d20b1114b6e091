-- bucket.lua: the step the token bucket and GCRA share (algorithms/bucket.go).
--
-- State: a string of 7-byte fields (pack.lua), tat frac latest count, and
-- only while a refund must still tell what came before the rate count last
-- changed, since booked bcount after them: 28 bytes, or 49. tat + frac/k µs
-- is the time at which the key is full again; latest the latest time (µs) a
-- request was admitted at, or denied at with a cost above 1; count the rate
-- count it was written under; since, booked and bcount see bucket_changed.
-- No state means a full bucket. k/p is the rate count over the period in
-- lowest terms; the emission interval is p/k µs. The layout's version is in
-- the key (storeredis's Key), so a ratewise that wrote "tat frac latest
-- count" in decimal, before it, never reads this one, nor this one its: a
-- string of another length is read as such text all the same, number by
-- number, and stays in range.
-- layout: 3 (2 before a value could carry writers' records, rec.lua)
-- requires: pack.lua
--
-- The step returns a new state when a request was admitted, or was denied
-- with a cost above 1 and moved the key's latest time, or when any decision,
-- an inspection included, found the state written under another rate count
-- and converted it; it expires when the bucket is full again, and while
-- since is set not before bucket_until.
--
-- Times are whole µs plus a fraction in 1/k µs, held as pairs (us, f) with
-- 0 <= f < k. n × interval is n×q µs plus n×r/k with q = p div k, r = p mod k;
-- n×r, like every product that could pass 2^53, goes through mul_div.

local MAXC, MAXD = 1125899906842624, 1125899906842624 -- 2^50: counts; µs

-- mul_div returns floor(a × b / c) and a × b mod c exactly, as mulDiv does in
-- Go, for integers 0 <= a, b < 2^53 and 0 < c <= 2^50 whose quotient is below
-- 2^53. A product below 2^52 is exact as a double. A larger one is never
-- formed: a is reduced mod c, and b is fed in base-m digits with c × m <=
-- 2^51, so every partial remainder times m and every digit product stays
-- below 2^52.
local function mul_div(a, b, c)
  local p = a * b
  if p < 4503599627370496 then return floor(p / c), p % c end
  local qa, ra = floor(a / c), a % c
  local m = 2
  while c * m * 2 <= 2251799813685248 do m = m * 2 end
  local digits, rest = {}, b
  while rest > 0 do
    digits[#digits + 1] = rest % m
    rest = floor(rest / m)
  end
  local q, r = 0, 0
  for i = #digits, 1, -1 do
    r = r * m + ra * digits[i]
    local d = floor(r / c)
    q = q * m + d
    r = r - d * c
  end
  return qa * b + q, r
end

-- lowest returns a rate of count per period µs in lowest terms.
local function lowest(count, period)
  local g, rest = count, period -- their gcd in g after the loop
  while rest > 0 do
    -- Not "g, rest = rest, g % rest": gopher-lua (miniredis) assigns g
    -- before it evaluates g % rest.
    local m = g % rest
    g = rest
    rest = m
  end
  return count / g, period / g
end

-- bucket_used reads the state raw under the rate count per period µs and
-- the burst: it returns k, p, q, r (the rate in lowest terms, k per p µs, and
-- the interval q + r/k µs), the capacity cap + cap_f/k µs, the decision time
-- eff, how far the key's TAT is ahead of it, used + used_f/k µs, the state's
-- latest time (nil for no state), and whether the state was written under
-- another rate count: converted, as algorithms/bucket.go's usedAt does, in
-- tokens at eff, which the decision must then write; then the state's own
-- tat, frac, rate count, since, booked and bcount, for bucket_changed.
-- The constants of the last two rates and bursts bucket_rate was given: a
-- batch's decisions mostly share one, a batch of sets one per limit of a
-- pair (a per-minute and a per-hour quota, say), and the gcd and mul_div are
-- then computed once per script call, not once per decision.
local rate_count, rate_period, rate_burst, rate_k, rate_p, rate_q, rate_r, rate_cap, rate_cap_f
local rate_count2, rate_period2, rate_burst2, rate_k2, rate_p2, rate_q2, rate_r2, rate_cap2, rate_cap_f2

-- bucket_rate returns the rate count per period µs in lowest terms, k per p
-- µs, the interval q + r/k µs, and the capacity of burst intervals, cap +
-- cap_f/k µs.
local function bucket_rate(count, period, burst)
  if count ~= rate_count or period ~= rate_period or burst ~= rate_burst then
    -- The last but one becomes the last, or the new one does, and the last
    -- the last but one.
    local k, p, q, r, cap, cap_f
    if count == rate_count2 and period == rate_period2 and burst == rate_burst2 then
      k, p, q, r, cap, cap_f = rate_k2, rate_p2, rate_q2, rate_r2, rate_cap2, rate_cap_f2
    else
      k, p = lowest(count, period)
      q, r = floor(p / k), p % k
      local c
      c, cap_f = mul_div(burst, r, k)
      cap = burst * q + c
    end
    rate_count2, rate_period2, rate_burst2 = rate_count, rate_period, rate_burst
    rate_k2, rate_p2, rate_q2, rate_r2, rate_cap2, rate_cap_f2 = rate_k, rate_p, rate_q, rate_r, rate_cap, rate_cap_f
    rate_count, rate_period, rate_burst = count, period, burst
    rate_k, rate_p, rate_q, rate_r, rate_cap, rate_cap_f = k, p, q, r, cap, cap_f
  end
  return rate_k, rate_p, rate_q, rate_r, rate_cap, rate_cap_f
end

local function bucket_used(raw, count, period, burst)
  local k, p, q, r, cap, cap_f = bucket_rate(count, period, burst)

  local eff, used, used_f = now, 0, 0 -- used: TAT - eff, used + used_f/k µs
  local latest, converted = nil, false
  local tat, frac, scount, since, booked, bcount
  if raw then
    local n = #raw
    if n == 28 then
      tat, frac, latest, scount = bin_unpack('>I7I7I7I7', raw)
      since, booked, bcount = 0, 0, 0
    elseif n == 49 then
      tat, frac, latest, scount, since, booked, bcount = bin_unpack('>I7I7I7I7I7I7I7', raw)
    else
      -- Not this layout: read the numbers there are, each kept below 2^53
      -- (a number too long for tonumber too), so that what is written back
      -- fits its 7 bytes.
      local v = {}
      for x in string.gmatch(raw, '%d+') do v[#v + 1] = min(tonumber(x) or 9007199254740991, 9007199254740991) end
      tat, frac, latest, scount = v[1] or now, v[2] or 0, v[3] or now, v[4] or 0
      since, booked, bcount = v[5] or 0, v[6] or 0, v[7] or 0
    end
    -- No decision writes a latest time past 2^52 µs; the cap keeps a value
    -- written by anything else in range.
    latest = min(latest, 4503599627370495)
    eff = max(now, latest)
    -- A state that holds no tokens at eff is as no state: nothing to
    -- convert, nor to write.
    converted = scount ~= count and (tat > eff or (tat == eff and frac > 0))
    if tat >= eff then
      if not converted or scount <= 0 or scount > MAXC then
        -- A count no decision writes reads as this one.
        used, used_f = min(tat - eff, MAXD), min(max(frac, 0), k - 1)
      else
        -- Written under another rate count: the tokens used at eff,
        -- (tat - eff) over the old interval, charged at this rate exactly,
        -- rounded up to 1/k µs: (u × scount + uf × g) / count µs, with
        -- g = scount / ok, the old count over its k.
        local ok = lowest(scount, period)
        local u, uf = min(tat - eff, MAXD), min(max(frac, 0), ok - 1)
        if count < scount and u > mul_div(MAXD, count, scount) then
          used, used_f = MAXD, 0
        else
          local qu, rem = mul_div(u, scount, count)
          rem = rem + uf * (scount / ok)
          qu, rem = qu + floor(rem / count), rem % count
          local g = count / k
          local f = ceil(rem / g)
          if f >= k then qu, f = qu + 1, f - k end
          if qu >= MAXD then qu, f = MAXD, 0 end
          used, used_f = qu, f
        end
      end
    end
  end
  return k, p, q, r, cap, cap_f, eff, used, used_f, latest, converted, tat, frac, scount, since, booked, bcount
end

-- bucket_until returns the µs from which a state no longer counts: when it
-- is full again, tat + frac rounded up, and while since is set no earlier
-- than a capacity's refill time after it, nor than booked (see
-- algorithms/bucket.go's keptUntil).
local function bucket_until(tat, frac, since, booked, cap, cap_f)
  local t = tat
  if frac > 0 then t = t + 1 end
  if since ~= 0 then
    local full = cap
    if cap_f > 0 then full = full + 1 end
    t = max(t, since + full, booked)
  end
  return t
end

-- bucket_changed returns the since, booked and bcount a write at eff leaves
-- on a state read as bucket_used reads it (tat nil for none), as
-- algorithms/bucket.go's changed does. A refund subtracts what has refilled
-- since the charge at its own rate, which is what the key refilled only if
-- its rate count has not changed since. So a write under another rate count
-- marks the change: since, the latest change (at least 1, so that 0 means
-- none), is later than every charge made before it; booked, the latest
-- time, rounded up, at which a key left by a rate count while holding
-- tokens would have been full again, is later by at least a capacity than
-- every booking made under that count before, and bounds the refunds of
-- that count, bcount, or of every count (0) once keys left by two counts
-- have set it. All three go at the first write under the same count from
-- bucket_until on.
local function bucket_changed(eff, tat, frac, scount, since, booked, bcount, count, cap, cap_f)
  if not tat then return 0, 0, 0 end
  if scount == count then
    if since ~= 0 and eff >= bucket_until(0, 0, since, booked, cap, cap_f) then return 0, 0, 0 end
    return since, booked, bcount
  end
  if tat > eff or (tat == eff and frac > 0) then
    local full = tat
    if frac > 0 then full = full + 1 end
    if booked == 0 or bcount == scount then
      booked, bcount = max(booked, full), scount
    else
      booked, bcount = max(booked, full), 0
    end
  end
  return max(eff, since, 1), booked, bcount
end

-- bucket_format returns the state's string (see State above), and how long after now the key
-- must be kept (bucket_until).
local function bucket_format(tat, frac, latest, count, since, booked, bcount, cap, cap_f)
  local keep = bucket_until(tat, frac, since, booked, cap, cap_f) - now
  if since == 0 then
    return bin_pack('>I7I7I7I7', tat, frac, latest, count), keep
  end
  return bin_pack('>I7I7I7I7I7I7I7', tat, frac, latest, count, since, booked, bcount), keep
end

local function bucket_step(_, raw, count, period, burst)
  local k, p, q, r, cap, cap_f, eff, used, used_f, latest, converted, tat, frac, scount, since, booked, bcount = bucket_used(raw, count, period, burst)
  local gap = eff - now -- the caller's clock behind the key's latest time

  local allowed, retry, reset, remaining = 0, 0, 0, 0
  -- after = used + need intervals
  local nc, nf = mul_div(need, r, k)
  local after, after_f = used + need * q + nc, used_f + nf
  if after_f >= k then after, after_f = after + 1, after_f - k end
  -- x: after - cap, rounded up to the µs: how long until after has
  -- drained to the capacity.
  local x, xf = after - cap, after_f - cap_f
  if xf < 0 then x, xf = x - 1, xf + k end
  local turn = eff + x -- a booking's turn, rounded down
  if xf > 0 then x = x + 1 end
  local delay, at = 0, eff
  if after < cap + slack or (after == cap + slack and after_f <= cap_f) then
    allowed = 1
    if x > 0 then delay, at = x + gap, turn end
    if cost > 0 then used, used_f = after, after_f end
  else
    -- The wait until its turn, whatever the slack (algorithms.Reserver).
    retry = x + gap
  end
  if used > 0 or used_f > 0 then
    reset = used + gap
    if used_f > 0 then reset = reset + 1 end
  end
  if used < cap or (used == cap and used_f <= cap_f) then
    -- Whole intervals left: floor((cap - used) × k / p).
    local x, xf = cap - used, cap_f - used_f
    if xf < 0 then x, xf = x - 1, xf + k end
    local tq, trem = mul_div(x, k, p)
    remaining = tq + floor((trem + xf) / p)
  end
  -- A denial of cost 1 and an inspection write nothing (see
  -- algorithms.Algorithm.Decide), unless they converted the state from
  -- another rate count.
  local new, keep
  if converted or (cost > 0 and (allowed == 1 or (cost > 1 and (not latest or eff > latest)))) then
    since, booked, bcount = bucket_changed(eff, tat, frac, scount, since, booked, bcount, count, cap, cap_f)
    new, keep = bucket_format(eff + used, used_f, eff, count, since, booked, bcount, cap, cap_f)
  end
  return allowed, remaining, retry, reset, at, new, keep, delay
end

-- bucket_refund gives back cost intervals of the key's TAT, less what has
-- refilled since at and less the bookings made after it, never past now
-- (algorithms.GCRA.Refund). It returns the new state and how long after now
-- the key must be kept, or nil.
local function bucket_refund(_, raw, at, count, period, burst)
  if not raw then return nil end
  local k, _, q, r, cap, cap_f, eff, used, used_f, _, _, _, _, scount, since, booked, bcount = bucket_used(raw, count, period, burst)
  -- A state written under another rate count since the charge, if only
  -- for a while (at before since, or a booking of this count whose turn is
  -- a capacity before booked): what the charge took is not what the key
  -- counts now, nor is what has refilled since, so nothing comes back; a
  -- full bucket has nothing to give back either.
  if scount ~= count or at < since
    or (booked ~= 0 and (bcount == 0 or bcount == count) and (booked > at + cap or (booked == at + cap and cap_f == 0)))
    or (used == 0 and used_f == 0) then return nil end
  local bc, back_f = mul_div(cost, r, k)
  local back = cost * q + bc
  if eff > at then back = back - (eff - at) end
  -- later = used + (eff - at) - cap: how far bookings made after the
  -- charge moved the TAT.
  local later, later_f = used + (eff - at) - cap, used_f - cap_f
  if later_f < 0 then later, later_f = later - 1, later_f + k end
  if later > 0 or (later == 0 and later_f > 0) then
    back, back_f = back - later, back_f - later_f
    if back_f < 0 then back, back_f = back - 1, back_f + k end
  end
  if back < 0 or (back == 0 and back_f == 0) then return nil end
  if back < used or (back == used and back_f < used_f) then
    used, used_f = used - back, used_f - back_f
    if used_f < 0 then used, used_f = used - 1, used_f + k end
  else
    used, used_f = 0, 0
  end
  return bucket_format(eff + used, used_f, eff, count, since, booked, bcount, cap, cap_f)
end

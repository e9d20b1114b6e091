-- bucket.lua: the step the token bucket and GCRA share (algorithms/bucket.go).
--
-- KEYS[1]  the key's state, a string "tat frac latest count": the time at
--          which the key is full again, tat + frac/k µs; the latest time (µs)
--          a request of cost > 0 was decided at; and the rate count it was
--          written under. No key means a full bucket.
-- ARGV[3]  burst (the token bucket's capacity)
-- ARGV[4]  rate count, as configured
-- ARGV[5]  rate period (µs), as configured
-- ARGV[6]  k: the rate count in lowest terms with the period
-- ARGV[7]  p: the period in lowest terms; the emission interval is p/k µs
-- Reply    {allowed, remaining, retry_after µs, reset_after µs, at µs}
--
-- GET, then SET … PX when a request of cost > 0 was admitted or moved the
-- key's latest time. The key expires when the bucket is full again.
--
-- Times are whole µs plus a fraction in 1/k µs, held as pairs (us, f) with
-- 0 <= f < k. n × interval is n×q µs plus n×r/k with q = p div k, r = p mod k;
-- n×r, like every product that could pass 2^53, goes through mul_div.

local MAXC, MAXD = 1125899906842624, 1125899906842624 -- 2^50: counts; µs

local function bucket_step(key, burst, count, period, k, p)
  local q, r = floor(p / k), p % k
  local function times(n)
    local c, f = mul_div(n, r, k)
    return n * q + c, f
  end
  local function add(a, af, b, bf)
    if af + bf >= k then return a + b + 1, af + bf - k end
    return a + b, af + bf
  end
  local function sub(a, af, b, bf)
    if af < bf then return a - b - 1, af - bf + k end
    return a - b, af - bf
  end
  local function less(a, af, b, bf) return a < b or (a == b and af < bf) end
  local function up(a, af) if af > 0 then return a + 1 end return a end
  -- how many whole intervals fit in (a, af): floor((a × k + af) / p)
  local function tokens(a, af)
    local n, rem = mul_div(a, k, p)
    return n + floor((rem + af) / p)
  end
  -- n intervals, at most 2^50 µs
  local function times_up_to(n)
    if q > 0 and n > floor(MAXD / q) then return MAXD, 0 end
    local a, af = times(n)
    if a >= MAXD then return MAXD, 0 end
    return a, af
  end
  -- (a, af) in intervals of ok per op µs, rounded up, at most 2^50
  local function tokens_up(a, af, ok, op)
    local whole = floor(a / op)
    if whole >= ceil(MAXC / ok) then return MAXC end
    local n, rem = mul_div(a % op, ok, op)
    n = n + whole * ok
    rem = rem + af
    n = n + floor(rem / op)
    if rem % op > 0 then n = n + 1 end
    return min(n, MAXC)
  end
  local function gcd(a, b)
    -- Not "a, b = b, a % b": gopher-lua (miniredis) assigns a before it
    -- evaluates a % b.
    while b > 0 do
      local rest = a % b
      a = b
      b = rest
    end
    return a
  end

  local eff, used, used_f = now, 0, 0
  local latest, scount
  local raw = redis.call('GET', key)
  if raw then
    local v = {}
    for n in string.gmatch(raw, '%-?%d+') do v[#v + 1] = tonumber(n) end
    local tat, frac = v[1] or now, v[2] or 0
    latest, scount = v[3] or now, v[4] or 0
    eff = max(now, latest)
    -- How far TAT was ahead of the latest time, under this rate.
    local u, uf = 0, 0
    if tat >= latest then
      if scount == count or scount <= 0 or scount > MAXC then
        u, uf = min(tat - latest, MAXD), min(max(frac, 0), k - 1)
      else
        -- Written under another rate count: charge the tokens it had
        -- used, rounded up to a whole token, at this rate, but never past
        -- its TAT (rounded down to this rate's fractions).
        local g = gcd(scount, period)
        local ok, op = scount / g, period / g
        local ahead, of = min(tat - latest, MAXD), min(max(frac, 0), ok - 1)
        u, uf = times_up_to(tokens_up(ahead, of, ok, op))
        local cf = mul_div(of, k, ok)
        if less(ahead, cf, u, uf) then u, uf = ahead, cf end
      end
    end
    local d = eff - latest
    if d < u or (d == u and uf > 0) then used, used_f = sub(u, uf, d, 0) end
  end
  local gap = eff - now
  local cap, cap_f = times(burst)

  local allowed, retry, reset, remaining = 0, 0, 0, 0
  local n, nf = times(need)
  local after, after_f = add(used, used_f, n, nf)
  if not less(cap, cap_f, after, after_f) then
    allowed = 1
    if cost > 0 then used, used_f = after, after_f end
  else
    retry = up(sub(after, after_f, cap, cap_f)) + gap
  end
  if used ~= 0 or used_f ~= 0 then reset = up(used, used_f) + gap end
  if not less(cap, cap_f, used, used_f) then remaining = tokens(sub(cap, cap_f, used, used_f)) end
  if cost > 0 and (allowed == 1 or not latest or eff > latest or scount ~= count) then
    redis.call('SET', key, int(eff + used) .. ' ' .. int(used_f) .. ' ' .. int(eff) .. ' ' .. int(count), 'PX', ttl_ms(reset))
  end
  return {allowed, remaining, retry, reset, eff}
end

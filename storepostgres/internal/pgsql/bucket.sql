-- bucket.sql: the step the token bucket and GCRA share (algorithms/bucket.go),
-- the port of the Redis store's bucket.lua. It is a template: gcra.sql and
-- token_bucket.sql say "-- instance of: bucket.sql", and the assembler
-- creates these functions under their names (__kind__), since a function
-- that calls another for its record result costs a plan of its own on
-- every call, which PostgreSQL cannot inline.
-- requires: bucket_math.sql
--
-- Parameters: the rate count per period µs, then the burst (the GCRA's Burst,
-- the token bucket's Capacity).
--
-- State: {tat, frac, latest, count} or {tat, frac, latest, count, since,
-- booked, bcount}: the time at which the key is full again, tat + frac/k µs;
-- the latest time (µs) a request was admitted at, or denied at with a cost
-- above 1; the rate count it was written under; and, only while a refund
-- must still tell what came before the rate count last changed, since,
-- booked and bcount (see the write in the step). No state means a full
-- bucket; an array of another length is no state, and a NULL element reads
-- as bucket.lua reads a number it cannot parse. k/p is the rate count over
-- the period in lowest terms; the emission interval is p/k µs.
--
-- The step returns a new state when a request was admitted, or was denied
-- with a cost above 1 and moved the key's latest time, or when any decision,
-- an inspection included, found the state written under another rate count
-- and converted it. It is kept until the bucket is full again, and while
-- since is set not before since + a capacity's refill time, nor booked
-- (algorithms/bucket.go's keptUntil).
--
-- Times are whole µs plus a fraction in 1/k µs, held as pairs (us, f) with
-- 0 <= f < k. n × interval is n×q µs plus n×r/k with q = p div k,
-- r = p mod k. Validation bounds every count by 2^50 and a full bucket's
-- refill time, burst × q µs, by 2^50µs, so n×q and every sum here fit a
-- bigint; n×r, x×k and the conversion's products reach 2^100, and go
-- through bucket_mul_div/bucket_mul_mod. Every operand is non-negative
-- where PostgreSQL's truncating / and % would differ from a floor.

CREATE OR REPLACE FUNCTION ratewise.__kind___step(state bigint[], now bigint, cost bigint, slack bigint,
    rate_count bigint, period bigint, burst bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  MAXD CONSTANT bigint := 1125899906842624; -- 2^50: the longest span in µs, and the largest count
  need bigint := CASE WHEN cost > 0 THEN cost ELSE greatest(-cost, 1) END;
  g bigint := gcd(rate_count, period);
  k bigint := rate_count / g; -- k per p µs
  p bigint := period / g;
  q bigint := p / k; -- the interval is q + r/k µs
  r bigint := p % k;
  cap bigint := burst * q + ratewise.bucket_mul_div(burst, r, k); -- burst intervals: cap + cap_f/k µs
  cap_f bigint := ratewise.bucket_mul_mod(burst, r, k);
  eff bigint := now; -- the decision time
  used bigint := 0; -- TAT - eff: used + used_f/k µs
  used_f bigint := 0;
  converted boolean := false;
  tat bigint; frac bigint; latest bigint; scount bigint;
  since bigint := 0; booked bigint := 0; bcount bigint := 0;
  ok bigint; u bigint; uf bigint; rem bigint; gk bigint;
  after bigint; after_f bigint; x bigint; xf bigint; turn bigint; gap bigint; refill bigint;
BEGIN
  IF cardinality(state) IN (4, 7) THEN
    -- No decision writes a time past 2^53 µs, nor a negative since or
    -- booked; the caps keep anything else from overflowing a bigint below.
    tat := least(coalesce(state[1], now), 4611686018427387904);
    frac := coalesce(state[2], 0);
    latest := least(coalesce(state[3], now), 4503599627370495);
    scount := coalesce(state[4], 0);
    IF cardinality(state) = 7 THEN
      since := least(greatest(coalesce(state[5], 0), 0), 4611686018427387904);
      booked := least(greatest(coalesce(state[6], 0), 0), 4611686018427387904);
      bcount := coalesce(state[7], 0);
    END IF;
    eff := greatest(now, latest);
    -- A state that holds no tokens at eff is as no state: nothing to
    -- convert, nor to write.
    converted := scount <> rate_count AND (tat > eff OR (tat = eff AND frac > 0));
    IF tat >= eff THEN
      u := least(tat - eff, MAXD);
      IF NOT converted OR scount <= 0 OR scount > MAXD THEN
        -- A count no decision writes reads as this one.
        used := u;
        used_f := least(greatest(frac, 0), k - 1);
      ELSIF rate_count < scount AND u > ratewise.bucket_mul_div(MAXD, rate_count, scount) THEN
        used := MAXD;
      ELSE
        -- Written under another rate count: the tokens used at eff,
        -- (tat - eff) over the old interval, charged at this rate exactly,
        -- rounded up to 1/k µs: (u × scount + uf × scount/ok) / rate_count
        -- µs, ok being the old count's k.
        ok := scount / gcd(scount, period);
        uf := least(greatest(frac, 0), ok - 1);
        used := ratewise.bucket_mul_div(u, scount, rate_count);
        rem := ratewise.bucket_mul_mod(u, scount, rate_count) + uf * (scount / ok);
        used := used + rem / rate_count;
        rem := rem % rate_count;
        gk := rate_count / k; -- rem / rate_count µs is rem / gk in 1/k µs, rounded up
        used_f := (rem + gk - 1) / gk;
        IF used_f >= k THEN
          used := used + 1;
          used_f := used_f - k;
        END IF;
        IF used >= MAXD THEN
          used := MAXD;
          used_f := 0;
        END IF;
      END IF;
    END IF;
  END IF;
  gap := eff - now; -- the caller's clock behind the key's latest time

  allowed := false; remaining := 0; retry := 0; reset := 0; at := eff; delay := 0;
  -- after = used + need intervals
  after := used + need * q + ratewise.bucket_mul_div(need, r, k);
  after_f := used_f + ratewise.bucket_mul_mod(need, r, k);
  IF after_f >= k THEN
    after := after + 1;
    after_f := after_f - k;
  END IF;
  -- x: after - cap, rounded up to the µs: how long until after has drained
  -- to the capacity.
  x := after - cap;
  xf := after_f - cap_f;
  IF xf < 0 THEN
    x := x - 1;
    xf := xf + k;
  END IF;
  turn := eff + x; -- a booking's turn, rounded down
  IF xf > 0 THEN
    x := x + 1;
  END IF;
  IF after < cap + slack OR (after = cap + slack AND after_f <= cap_f) THEN
    allowed := true;
    IF x > 0 THEN
      delay := x + gap;
      at := turn;
    END IF;
    IF cost > 0 THEN
      used := after;
      used_f := after_f;
    END IF;
  ELSE
    -- The wait until its turn, whatever the slack (algorithms.Reserver).
    retry := x + gap;
  END IF;
  IF used > 0 OR used_f > 0 THEN
    reset := used + gap + (used_f > 0)::int;
  END IF;
  IF used < cap OR (used = cap AND used_f <= cap_f) THEN
    -- Whole intervals left: floor((cap - used) × k / p).
    x := cap - used;
    xf := cap_f - used_f;
    IF xf < 0 THEN
      x := x - 1;
      xf := xf + k;
    END IF;
    remaining := ratewise.bucket_mul_div(x, k, p) + (ratewise.bucket_mul_mod(x, k, p) + xf) / p;
  END IF;

  -- A denial of cost 1 and an inspection write nothing (see
  -- algorithms.Algorithm.Decide), unless they converted the state from
  -- another rate count.
  refill := cap + (cap_f > 0)::int; -- a capacity's refill time, rounded up
  IF NOT (converted OR (cost > 0 AND (allowed OR (cost > 1 AND (latest IS NULL OR eff > latest))))) THEN
    -- Nothing to write: keep is how long the state read still counts, so
    -- that a store may refresh its expiry all the same.
    keep := 0;
    IF tat >= now THEN
      keep := tat + (frac > 0)::int - now;
    END IF;
    IF since <> 0 THEN
      keep := greatest(keep, since + refill - now, booked - now);
    END IF;
    RETURN;
  END IF;
  -- A refund subtracts what has refilled since the charge at its own rate,
  -- which is what the key refilled only if its rate count has not changed
  -- since. So a write under another rate count marks the change: since, the
  -- latest change (at least 1, so that 0 means none), is later than every
  -- charge made before it; booked, the latest time, rounded up, at which a
  -- key left by a rate count while holding tokens would have been full
  -- again, is later by at least a capacity than every booking made under
  -- that count before, and bounds the refunds of that count, bcount, or of
  -- every count (0) once keys left by two counts have set it. All three go
  -- at the first write under the same count from which none counts
  -- (algorithms/bucket.go's changed).
  IF tat IS NULL THEN
    since := 0; booked := 0; bcount := 0;
  ELSIF scount = rate_count THEN
    IF since <> 0 AND eff >= greatest(0, since + refill, booked) THEN
      since := 0; booked := 0; bcount := 0;
    END IF;
  ELSE
    IF tat > eff OR (tat = eff AND frac > 0) THEN
      IF booked <> 0 AND bcount <> scount THEN
        bcount := 0;
      ELSE
        bcount := scount;
      END IF;
      booked := greatest(booked, tat + (frac > 0)::int);
    END IF;
    since := greatest(eff, since, 1);
  END IF;
  tat := eff + used;
  keep := tat + (used_f > 0)::int;
  IF since = 0 THEN
    new := ARRAY[tat, used_f, eff, rate_count];
  ELSE
    new := ARRAY[tat, used_f, eff, rate_count, since, booked, bcount];
    keep := greatest(keep, since + refill, booked);
  END IF;
  keep := keep - now;
END $$;

-- The refund gives back cost intervals of the key's TAT, less what has
-- refilled since at and less the bookings made after it, never past now
-- (algorithms.GCRA.Refund). keep is how long after now the state must be
-- kept (bucket.lua's refund returns it as its least).
CREATE OR REPLACE FUNCTION ratewise.__kind___refund(state bigint[], now bigint, at bigint, cost bigint,
    rate_count bigint, period bigint, burst bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  MAXD CONSTANT bigint := 1125899906842624;
  g bigint := gcd(rate_count, period);
  k bigint := rate_count / g;
  p bigint := period / g;
  q bigint := p / k;
  r bigint := p % k;
  cap bigint := burst * q + ratewise.bucket_mul_div(burst, r, k);
  cap_f bigint := ratewise.bucket_mul_mod(burst, r, k);
  tat bigint; frac bigint; eff bigint; since bigint; booked bigint; bcount bigint;
  used bigint := 0; used_f bigint := 0;
  back bigint; back_f bigint; later bigint; later_f bigint;
BEGIN
  -- A state written under another rate count since the charge gives
  -- nothing back: what the charge took is not what the key counts now, nor
  -- is what has refilled since. The step's conversion is never needed here.
  IF NOT (cardinality(state) IN (4, 7)) OR coalesce(state[4], 0) <> rate_count THEN
    RETURN;
  END IF;
  tat := least(coalesce(state[1], now), 4611686018427387904);
  frac := coalesce(state[2], 0);
  eff := greatest(now, least(coalesce(state[3], now), 4503599627370495));
  since := least(greatest(coalesce(state[5], 0), 0), 4611686018427387904);
  booked := least(greatest(coalesce(state[6], 0), 0), 4611686018427387904);
  bcount := coalesce(state[7], 0);
  -- Nor does a charge that may have come before the rate count last
  -- changed, if only for a while: at before since, or a booking of this
  -- count whose turn is a capacity or more before booked.
  IF at < since OR (booked <> 0 AND (bcount = 0 OR bcount = rate_count)
      AND (booked > at + cap OR (booked = at + cap AND cap_f = 0))) THEN
    RETURN;
  END IF;
  IF tat > eff OR (tat = eff AND frac > 0) THEN
    used := least(tat - eff, MAXD);
    used_f := least(greatest(frac, 0), k - 1);
  END IF;
  IF used = 0 AND used_f = 0 THEN
    RETURN; -- a full bucket: nothing counts, nothing to give back
  END IF;
  back := cost * q + ratewise.bucket_mul_div(cost, r, k);
  back_f := ratewise.bucket_mul_mod(cost, r, k);
  IF eff > at THEN
    -- What has refilled since the charge: the bucket may have been full
    -- since, had the request never been made.
    back := back - (eff - at);
  END IF;
  -- later = used + (eff - at) - cap: how far bookings made after the
  -- charge moved the TAT; their turns are already set behind it.
  later := used + (eff - at) - cap;
  later_f := used_f - cap_f;
  IF later_f < 0 THEN
    later := later - 1;
    later_f := later_f + k;
  END IF;
  IF later > 0 OR (later = 0 AND later_f > 0) THEN
    back := back - later;
    back_f := back_f - later_f;
    IF back_f < 0 THEN
      back := back - 1;
      back_f := back_f + k;
    END IF;
  END IF;
  IF back < 0 OR (back = 0 AND back_f = 0) THEN
    RETURN;
  END IF;
  IF back < used OR (back = used AND back_f < used_f) THEN
    used := used - back;
    used_f := used_f - back_f;
    IF used_f < 0 THEN
      used := used - 1;
      used_f := used_f + k;
    END IF;
  ELSE
    used := 0;
    used_f := 0;
  END IF;
  tat := eff + used;
  keep := tat + (used_f > 0)::int;
  IF since = 0 THEN
    new := ARRAY[tat, used_f, eff, rate_count];
  ELSE
    new := ARRAY[tat, used_f, eff, rate_count, since, booked, bcount];
    keep := greatest(keep, since + cap + (cap_f > 0)::int, booked);
  END IF;
  keep := keep - now;
END $$;

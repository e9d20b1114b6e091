-- log.sql: the step the sliding log and the sliding window counter share
-- (algorithms/log.go), the step of the Redis store's log.lua: a sliding log
-- whose timestamps are rounded down to a multiple of a quantum (1µs for the
-- sliding log, the sub-window for the sliding window counter), one record
-- per admitted request (or sub-window).
--
-- State: {total, latest, at1, start1, at2, start2, …}: two metas, then the
-- records still counting at the last write, oldest first, two elements each.
--   total   the cost admitted up to and including the newest record, modulo
--           2^52
--   latest  the latest time (µs) a request was admitted at, or denied at with
--           a cost above 1
--   at      a record's time, µs since the Unix epoch, rounded down to the
--           quantum; strictly increasing
--   start   the cost admitted before the record, modulo 2^52; a record's cost
--           is the next record's start (total for the newest) minus its own,
--           modulo 2^52
-- One record costs 16 bytes (two bigints; the array has no null bitmap), and
-- a key 40 bytes more (the array's 24-byte header and the metas), before
-- TOAST compresses a large log. Keeping running totals rather than costs
-- finds the oldest cost still counting, and the record a denied request
-- waits for, by binary search, as log.go does: a decision that writes
-- nothing reads O(log n) elements.
--
-- Unlike the sorted set, which log.lua reads and trims piecewise (at most
-- 1,000 expired records per call), the array is read and rewritten whole,
-- so every write drops every record that expired, as log.go's step and
-- refund do (they keep only the records still counting). That is Go's
-- state record for record, so no Result can differ from Go's; it differs
-- from log.lua only past 1,000 expired records, where the script keeps some
-- that a later request with an earlier clock (one whose now is before the
-- latest time) would count and Go would not.
--
-- Times are in [0, 2^52) and windows and costs at most 2^50
-- (algorithms.MaxTime, Validate), so no sum here nears 2^63 and there are no
-- products: bigint arithmetic is exact, and % on non-negative times floors
-- as Go's floorMod does. Totals wrap at 2^52 as Go's and Lua's do; what
-- counts is below 2^51, so a difference of two of them masked with 2^52-1
-- (floorMod by 2^52 in two's complement) is exact.

-- log_records returns the number of records in state, or NULL when state is
-- not a log this file wrote (NULL, another shape, a NULL element, the metas
-- or the newest time out of range), which the step and refund read as no
-- state. The checks are O(1) but for array_position, a scan in C. They bound
-- every element that enters arithmetic as it is; the steps mask the starts
-- they read and clamp the one other time, so that no array, even one
-- unsorted, can make them fail or return a Result out of range. A SQL
-- function, so that it is inlined.
CREATE OR REPLACE FUNCTION ratewise.log_records(state bigint[]) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN array_ndims(state) = 1 AND array_lower(state, 1) = 1 AND cardinality(state) % 2 = 0 THEN
    -- Nested, since array_position refuses an array of more dimensions.
    CASE WHEN array_position(state, NULL) IS NULL
      AND state[1] BETWEEN 0 AND 4503599627370495
      AND state[2] BETWEEN 0 AND 4503599627370495
      AND (cardinality(state) = 2 OR state[cardinality(state) - 1] BETWEEN 0 AND 4503599627370495)
    THEN cardinality(state) / 2 - 1 END
  END
$$;

-- log_step decides on the log state for a request of cost at now, under a
-- limit of lim per window of win µs, with timestamps rounded down to a
-- multiple of quantum µs (algorithms.logStep); the OUT list is a kind's
-- step's (pgsql.go).
CREATE OR REPLACE FUNCTION ratewise.log_step(state bigint[], now bigint, cost bigint,
    lim bigint, win bigint, quantum bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  wrap constant bigint := 4503599627370495; -- 2^52 - 1
  need bigint := CASE WHEN cost > 0 THEN cost ELSE greatest(-cost, 1) END;
  n int := ratewise.log_records(state);
  total bigint := 0;
  latest bigint;
  stamp bigint;
  horizon bigint;
  live int;            -- the oldest record still counting, n + 1 for none
  base bigint;         -- its start: units still counting are numbered from it
  count bigint := 0;
  newest bigint;       -- the newest record's time, when count > 0
  target bigint;
  lo int; hi int; step int; probe int;
BEGIN
  at := now; retry := 0; reset := 0; delay := 0;
  IF n IS NULL THEN
    n := 0;
  ELSE
    total := state[1];
    latest := state[2];
    -- A now earlier than the key's latest time is decided at that time.
    at := greatest(now, latest);
  END IF;
  stamp := at - at % quantum;
  horizon := stamp - win;

  -- Records stamped at or before horizon have expired; they are a prefix,
  -- usually empty or short, so the search for the oldest record still
  -- counting gallops from the oldest record before it bisects: one probe
  -- when nothing expired. (Inline: a call costs more than the search.)
  lo := 1; hi := n + 1; step := 1;
  WHILE lo < hi LOOP
    probe := least(lo + step - 1, hi - 1);
    IF state[2 * probe + 1] > horizon THEN
      hi := probe;
      EXIT;
    END IF;
    lo := probe + 1;
    step := step * 2;
  END LOOP;
  WHILE lo < hi LOOP
    probe := (lo + hi) / 2;
    IF state[2 * probe + 1] > horizon THEN hi := probe; ELSE lo := probe + 1; END IF;
  END LOOP;
  live := lo;
  IF live <= n THEN
    base := state[2 * live + 2] & wrap;
    count := (total - base) & wrap;
    -- A record still counting lies after horizon, at a multiple of
    -- quantum: the bound holds the Result in range for any array.
    newest := greatest(state[2 * n + 1], horizon + quantum);
  END IF;

  allowed := count + need <= lim;
  IF NOT allowed THEN
    -- The (count+need-lim)-th oldest unit still counting must expire
    -- first; it lies in the last record starting at or before it. The
    -- search gallops from the oldest record, where a request of cost 1 at
    -- its limit finds it at once, then bisects.
    target := count + need - lim - 1;
    lo := live; hi := n; step := 1;
    WHILE lo < hi LOOP
      probe := least(lo + step, hi);
      IF ((state[2 * probe + 2] & wrap) - base) & wrap <= target THEN
        lo := probe;
        step := step * 2;
      ELSE
        hi := probe - 1;
        EXIT;
      END IF;
    END LOOP;
    WHILE lo < hi LOOP
      probe := (lo + hi + 1) / 2;
      IF ((state[2 * probe + 2] & wrap) - base) & wrap <= target THEN lo := probe; ELSE hi := probe - 1; END IF;
    END LOOP;
    -- Clamped to where the record lies in a log this file wrote, so that
    -- no array can overflow or return a retry of 0.
    retry := least(greatest(state[2 * lo + 1], horizon + quantum), newest) + win - now;
    -- A denial drops what expired, which a later request with an earlier
    -- clock would otherwise count; one of cost above 1 also leaves its
    -- time, one of cost 1 does not (algorithms.Algorithm's decide), so
    -- that it writes nothing when nothing expired.
    IF cost > 0 AND (live > 1 OR (cost > 1 AND at > latest)) THEN
      new := ARRAY[total, CASE WHEN cost > 1 THEN at ELSE latest END] || state[2 * live + 1 : 2 * n + 2];
    END IF;
  ELSIF cost > 0 THEN
    IF live > n THEN
      -- Nothing counts any more: start again from a total of 0.
      new := ARRAY[cost, at, stamp, 0];
    ELSIF newest <> stamp THEN
      new := ARRAY[(total + cost) & wrap, at] || state[2 * live + 1 : 2 * n + 2] || ARRAY[stamp, total];
    ELSE
      -- The newest record has the same stamp and absorbs the cost.
      new := ARRAY[(total + cost) & wrap, at] || state[2 * live + 1 : 2 * n + 2];
    END IF;
    count := count + cost;
    newest := stamp;
  END IF;

  remaining := greatest(0, lim - count);
  IF count > 0 THEN
    reset := newest + win - now;
  END IF;
  -- The records count until reset, and at is never later than that while
  -- they do; with none left, the latest time still matters until at.
  keep := greatest(reset, at - now);
END $$;

-- log_refund gives back cost units charged at time at, if that request
-- still counts (algorithms.logRefund): off the newest record when the
-- request is in it, otherwise the oldest units counting. The key's latest
-- time moves on to the decision time, as an admission's does, and what
-- expired by then goes. Nothing needs keeping beyond what the inspection
-- after it reports, so keep is NULL, as log.lua's refund returns no least.
CREATE OR REPLACE FUNCTION ratewise.log_refund(state bigint[], now bigint, at bigint, cost bigint,
    win bigint, quantum bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  wrap constant bigint := 4503599627370495; -- 2^52 - 1
  n int := ratewise.log_records(state);
  total bigint;
  eff bigint;
  stamp bigint;
  live int;
  base bigint;
  count bigint;
  c bigint;
  k bigint;
  lo int; hi int; probe int;
BEGIN
  IF n IS NULL OR n = 0 THEN
    RETURN;
  END IF;
  total := state[1];
  eff := greatest(now, state[2]);
  stamp := eff - eff % quantum;
  -- The charge counts no more.
  IF at - at % quantum <= stamp - win THEN
    RETURN;
  END IF;
  -- The oldest record still counting, n + 1 for none.
  lo := 1; hi := n + 1;
  WHILE lo < hi LOOP
    probe := (lo + hi) / 2;
    IF state[2 * probe + 1] > stamp - win THEN hi := probe; ELSE lo := probe + 1; END IF;
  END LOOP;
  live := lo;
  IF live > n THEN
    RETURN;
  END IF;

  IF state[2 * n + 1] = at - at % quantum THEN
    -- The refunded request is in the newest record: its units come off,
    -- exactly as if they had never been recorded, and the record with them
    -- when they are all it holds.
    c := (total - (state[2 * n + 2] & wrap)) & wrap;
    k := least(cost, c);
    IF k <= 0 THEN
      RETURN;
    END IF;
    new := ARRAY[(total - k) & wrap, eff]
      || state[2 * live + 1 : 2 * n + CASE WHEN k = c THEN 0 ELSE 2 END];
    RETURN;
  END IF;

  -- Requests were recorded since: the oldest units counting go instead
  -- (see algorithms.SlidingLog.Refund). Units are numbered from the oldest
  -- record's start, and the first one kept, the k-th, lies in the last
  -- record that starts at or before it.
  base := state[2 * live + 2] & wrap;
  count := (total - base) & wrap;
  k := least(cost, count);
  IF k <= 0 THEN
    RETURN;
  END IF;
  IF k = count THEN
    new := ARRAY[total, eff];
    RETURN;
  END IF;
  lo := live; hi := n;
  WHILE lo < hi LOOP
    probe := (lo + hi + 1) / 2;
    IF ((state[2 * probe + 2] & wrap) - base) & wrap <= k THEN lo := probe; ELSE hi := probe - 1; END IF;
  END LOOP;
  IF ((state[2 * lo + 2] & wrap) - base) & wrap = k THEN
    new := ARRAY[total, eff] || state[2 * lo + 1 : 2 * n + 2];
  ELSE
    -- The record holding the k-th unit keeps only its units from it on.
    new := ARRAY[total, eff, state[2 * lo + 1], (base + k) & wrap] || state[2 * lo + 3 : 2 * n + 2];
  END IF;
END $$;

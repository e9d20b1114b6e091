-- compact_log.sql: the exact sliding log in an array of timestamps
-- (algorithms.CompactLog), the step of the Redis store's compact_log.lua: it
-- decides exactly as the sliding log does.
--
-- State: {latest, t1, t2, …, tn}: the latest time (µs) a request was
-- admitted at, or denied at with a cost above 1, or a refund was made at (0
-- for none), then one timestamp (µs) per unit of admitted cost, oldest
-- first. Timestamps are never later than latest, and each write drops those
-- that have expired, so n is the cost still counting at the last write.
-- There is no ring: Redis keeps one so that a step reads and writes a few
-- slots of a string, but here the whole array is read and rewritten on
-- every write anyway, so the live timestamps are sliced out once and the
-- new ones appended once. The i-th timestamp stored, counting from 0 as
-- Go's compactLogState.at(i), is state[i + 2].
--
-- Cost: a one-dimensional bigint array without NULLs takes a 24-byte header
-- and 8 bytes an element, so a key takes 32 + 8n bytes (29 + 8n while under
-- 127 bytes, where the tuple holds it with a 1-byte length), n at most the
-- limit (or the largest limit the key had while its timestamps counted),
-- before the row's own overhead; Redis's ring takes 32 bytes and 8 a slot,
-- and up to a third of its slots may be free after it grows by half. An
-- array over about 2 kB is compressed or moved out of line by TOAST.
--
-- A state that is not such an array (not one-dimensional from 1, NULLs,
-- latest out of [0, 2^52), the oldest below 0 or the newest after latest)
-- reads as none. The timestamps in between are not checked, which would
-- take a pass over the array: only this file writes them, in order.
--
-- Every value is a time or a window below 2^53, or a count below 2^21 plus
-- the array's length: no sum nears 2^63, and nothing is multiplied, so all
-- of it is bigint.

-- compact_log_gone returns how many of the n timestamps in state have
-- expired at edge (those at or before it), a prefix: a gallop from the
-- oldest, then a bisection, as Go's firstLive and the Lua step's
-- compact_log_first find it. It is the step's and the refund's, which call
-- it only once the oldest has expired, so that a decision that finds
-- nothing expired makes no call.
CREATE OR REPLACE FUNCTION ratewise.compact_log_gone(state bigint[], n bigint, edge bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  lo bigint := 0;      -- at(lo) has expired
  hi bigint := n;      -- at(hi) has not, or hi = n
  stride bigint := 1;
  mid bigint;
BEGIN
  IF n = 0 OR state[2] > edge THEN
    RETURN 0;
  END IF;
  WHILE lo + stride < n LOOP
    IF state[lo + stride + 2] > edge THEN
      hi := lo + stride;
      EXIT;
    END IF;
    lo := lo + stride;
    stride := stride * 2;
  END LOOP;
  WHILE hi - lo > 1 LOOP
    mid := lo + (hi - lo) / 2;
    IF state[mid + 2] > edge THEN hi := mid; ELSE lo := mid; END IF;
  END LOOP;
  RETURN hi;
END $$;

CREATE OR REPLACE FUNCTION ratewise.compact_log_step(state bigint[], now bigint, cost bigint, slack bigint,
    lim bigint, win bigint, p3 bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  need bigint := CASE WHEN cost > 0 THEN cost ELSE greatest(-cost, 1) END;
  n bigint := 0;       -- timestamps stored
  latest bigint := 0;
  eff bigint := now;   -- the time decided at
  gone bigint := 0;    -- how many stored have expired, a prefix
  count bigint;        -- how many still count
BEGIN
  -- CASE orders the tests, since array_position fails on more than one
  -- dimension; the parentheses keep its THEN from ending the IF's.
  IF (CASE WHEN array_ndims(state) = 1 AND array_lower(state, 1) = 1 THEN
        state[1] BETWEEN 0 AND 4503599627370495
        AND (cardinality(state) = 1 OR (state[2] >= 0 AND state[cardinality(state)] <= state[1]))
        AND array_position(state, NULL) IS NULL
      END) THEN
    n := cardinality(state) - 1;
    latest := state[1];
    -- A now earlier than the latest time is decided at that time.
    eff := greatest(now, latest);
  END IF;
  at := eff; retry := 0; reset := 0; delay := 0;

  -- The expired prefix (compact_log_gone), looked for only when the
  -- oldest has expired, so a key whose write dropped what had expired reads
  -- one timestamp.
  IF n > 0 AND state[2] <= eff - win THEN
    gone := ratewise.compact_log_gone(state, n, eff - win);
  END IF;
  count := n - gone;

  allowed := count + need <= lim;
  IF NOT allowed THEN
    -- The (count+need-lim)-th oldest unit still counting, at(n+need-lim-1),
    -- must expire first.
    retry := state[n + need - lim + 1] + win - now;
  END IF;

  IF cost > 0 THEN
    IF allowed OR cost > 1 THEN
      latest := eff;
    END IF;
    -- A request drops what expired, even when denied, as the sliding log
    -- does; a denial of cost 1 with nothing expired changes nothing.
    IF allowed OR cost > 1 OR gone > 0 THEN
      IF gone = n THEN
        new := ARRAY[latest];  -- nothing counts any more, or no state
      ELSE
        -- The live timestamps with the element before them, which becomes
        -- the header: the state as it is when nothing expired, else one
        -- slice, no copy per element.
        IF gone = 0 THEN
          new := state;
        ELSE
          new := state[gone + 1 : n + 1];
        END IF;
        new[1] := latest;
      END IF;
      IF allowed THEN
        -- PL/pgSQL appends one element to an array variable in place; cost
        -- is at most the limit, 2^20, an int.
        IF cost = 1 THEN
          new := new || eff;
        ELSE
          new := new || array_fill(eff, ARRAY[cost::int]);
        END IF;
        count := count + cost;
      END IF;
    END IF;
  END IF;

  IF allowed AND cost > 0 THEN
    -- The newest timestamp is the admission's own.
    reset := eff + win - now;
  ELSIF count > 0 THEN
    reset := state[n + 1] + win - now;
  END IF;
  remaining := greatest(0, lim - count);
  -- The state counts until its newest timestamp expires, and holds latest
  -- until now reaches it. For an admission that is Lua's TTL, eff + win -
  -- now; a denial that writes leaves the Redis key's TTL, which is then the
  -- newest timestamp's expiry, later than eff since something still counts.
  keep := greatest(reset, eff - now);
END $$;

-- compact_log_refund gives back cost units charged at time at
-- (algorithms.CompactLog.Refund): off the newest timestamps when they are
-- at, the request's own, otherwise off the oldest still counting. It drops
-- what expired and sets latest to the time decided at, as a decision does.
-- What the state must be kept for is what the inspection after it says.
CREATE OR REPLACE FUNCTION ratewise.compact_log_refund(state bigint[], now bigint, at bigint, cost bigint,
    lim bigint, win bigint, p3 bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  n bigint;
  eff bigint;
  gone bigint := 0;
  k bigint;
  lo bigint;
  hi bigint;
  mid bigint;
BEGIN
  -- A state the step would read as none, as there.
  IF (CASE WHEN array_ndims(state) = 1 AND array_lower(state, 1) = 1 THEN
        state[1] BETWEEN 0 AND 4503599627370495
        AND (cardinality(state) = 1 OR (state[2] >= 0 AND state[cardinality(state)] <= state[1]))
        AND array_position(state, NULL) IS NULL
      END) IS NOT TRUE THEN
    RETURN;
  END IF;
  n := cardinality(state) - 1;
  eff := greatest(now, state[1]);

  -- The expired prefix, as in the step.
  IF n > 0 AND state[2] <= eff - win THEN
    gone := ratewise.compact_log_gone(state, n, eff - win);
  END IF;
  -- A charge that expired, or a key with nothing counting, has nothing to
  -- give back.
  IF at <= eff - win OR gone = n THEN
    RETURN;
  END IF;

  -- Each branch slices out the timestamps that stay with the element before
  -- them, which becomes the header.
  IF state[n + 1] = at THEN
    -- The units stamped as the newest, found by bisection: at(hi) = at,
    -- and lo is before the live ones or at(lo) < at.
    lo := gone - 1; hi := n - 1;
    WHILE hi - lo > 1 LOOP
      mid := lo + (hi - lo) / 2;
      IF state[mid + 2] = at THEN hi := mid; ELSE lo := mid; END IF;
    END LOOP;
    k := least(cost, n - hi);
    new := state[gone + 1 : n + 1 - k];
  ELSE
    k := least(cost, n - gone);
    new := state[gone + k + 1 : n + 1];
  END IF;
  new[1] := eff;
END $$;

-- fixed_window.sql: the fixed window counter (algorithms.FixedWindow), the
-- step of the Redis store's fixed_window.lua.
--
-- State: {start, count}: the start of the window being counted (µs) and the
-- cost admitted in it. An admission writes it, kept until its window ends.

CREATE OR REPLACE FUNCTION ratewise.fixed_window_step(state bigint[], now bigint, cost bigint, slack bigint,
    lim bigint, win bigint, p3 bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  need bigint := CASE WHEN cost > 0 THEN cost ELSE greatest(-cost, 1) END;
  start bigint := now - now % win;
  count bigint := 0;
BEGIN
  at := now; retry := 0; reset := 0; delay := 0;
  IF cardinality(state) = 2 THEN
    -- A window later than now's means the clock stepped back: keep
    -- counting in it, so nothing extra gets through.
    IF state[1] > start THEN
      start := state[1];
      at := state[1];
    END IF;
    IF state[1] = start THEN
      count := state[2];
    END IF;
  END IF;
  allowed := count + need <= lim;
  IF allowed THEN
    IF cost > 0 THEN
      count := count + cost;
      new := ARRAY[start, count];
    END IF;
  ELSE
    retry := start + win - now;
  END IF;
  IF count > 0 THEN
    reset := start + win - now;
  END IF;
  remaining := greatest(0, lim - count);
  keep := start + win - now;
END $$;

-- fixed_window_refund takes cost off the count, not below zero, when at is
-- in the key's window and that window is not over
-- (algorithms.FixedWindow.Refund).
CREATE OR REPLACE FUNCTION ratewise.fixed_window_refund(state bigint[], now bigint, at bigint, cost bigint,
    lim bigint, win bigint, p3 bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF cardinality(state) <> 2 OR state[2] <= 0 OR state[1] <> at - at % win
      OR state[1] + win <= now - now % win THEN
    RETURN;
  END IF;
  new := ARRAY[state[1], state[2] - least(cost, state[2])];
END $$;

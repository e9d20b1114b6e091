-- calendar_window.sql: the quota per calendar period
-- (algorithms.CalendarWindow), the step of the Redis store's
-- calendar_window.lua.
--
-- Parameters: the limit; b, the boundary between two periods nearest the
-- caller's now (µs); and the lengths of the period that ends at b and of
-- the one that starts there, in whole seconds, packed as before * 2^22 +
-- after. The caller finds the periods in its time zone; the step finds
-- among those two the one its own now is in, so that on the server's clock
-- it counts in the server's period. A now in neither, a clock more than
-- half a period from the caller's, raises an error that names it
-- (internal/algo's CalendarSkew reads it), rather than count in the wrong
-- period: the store sends the request again with the periods about that
-- now.
--
-- State: {start, end, count}: the period being counted (µs) and the cost
-- admitted in it. An admission writes it, kept until its period ends.

-- calendar_window_period returns the period [start, stop) of the two
-- about b that t is in, or raises an error.
CREATE OR REPLACE FUNCTION ratewise.calendar_window_period(t bigint, b bigint, packed bigint,
    OUT start bigint, OUT stop bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  before bigint := (packed / 4194304) * 1000000;
  after bigint := (packed % 4194304) * 1000000;
BEGIN
  IF t >= b AND t < b + after THEN
    start := b; stop := b + after;
  ELSIF t < b AND t >= b - before THEN
    start := b - before; stop := b;
  ELSE
    RAISE EXCEPTION 'calendar_window: the store''s clock reads %us, more than half a period from %us, the boundary nearest the caller''s', t, b;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION ratewise.calendar_window_step(state bigint[], now bigint, cost bigint, slack bigint,
    lim bigint, b bigint, packed bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  need bigint := CASE WHEN cost > 0 THEN cost ELSE greatest(-cost, 1) END;
  start bigint;
  stop bigint;
  count bigint := 0;
BEGIN
  SELECT p.start, p.stop INTO start, stop FROM ratewise.calendar_window_period(now, b, packed) p;
  at := now; retry := 0; reset := 0; delay := 0;
  IF cardinality(state) = 3 THEN
    -- A period later than now's means the clock stepped back: keep
    -- counting in it, so nothing extra gets through.
    IF state[1] > start THEN
      start := state[1];
      stop := state[2];
      at := state[1];
    END IF;
    IF state[1] = start THEN
      count := state[3];
    END IF;
  END IF;
  allowed := count + need <= lim;
  IF allowed THEN
    IF cost > 0 THEN
      count := count + cost;
      new := ARRAY[start, stop, count];
    END IF;
  ELSE
    retry := stop - now;
  END IF;
  IF count > 0 THEN
    reset := stop - now;
  END IF;
  remaining := greatest(0, lim - count);
  keep := stop - now;
END $$;

-- calendar_window_refund takes cost off the count, not below zero, when at
-- is in the key's period and that period is not over.
CREATE OR REPLACE FUNCTION ratewise.calendar_window_refund(state bigint[], now bigint, at bigint, cost bigint,
    lim bigint, b bigint, packed bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF cardinality(state) <> 3 OR state[3] <= 0 OR at < state[1] OR at >= state[2] OR now >= state[2] THEN
    RETURN;
  END IF;
  new := ARRAY[state[1], state[2], state[3] - least(cost, state[3])];
END $$;

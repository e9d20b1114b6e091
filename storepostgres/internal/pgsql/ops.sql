-- ops.sql: the drivers that take any kinds: a set's decision and a reset.

-- decide_set decides a request over a set of limits on one subject, all or
-- nothing (store.SetDecider). Limit i has the key _keys[i], the kind
-- _kinds[i] and the parameters _params[3i-2…3i]. Every step runs first,
-- writing nothing. If all admit, each writes what it returned: every limit
-- is charged. If any denies, only the denying steps write (a denial writes
-- what it would alone), and each admitting limit is decided again at cost
-- 0, an inspection, for its uncharged result, which writes only a bucket
-- state it converted from another rate count, as it would alone. It
-- returns {allowed, remaining, retry_after, reset_after, at} for each
-- limit.
--
-- The rows are locked in the order of their keys, created first if
-- missing, so that two sets, or a set and a batch (drivers.sql), that
-- share keys never wait for each other in a cycle. Steps are called by
-- name (EXECUTE), which plans each call.
--
-- With a request ID (_once), the outcome is kept as decide.lua's is: then
-- for each limit _lims[i], p1 and p3 (or 0), then the cost; an admission
-- that charged keeps it, and marks each of _marks (each limit's own once
-- key for the set, which a refund with the ID looks for), for as long as
-- the longest reset_after (plus the grace) and at least _horizon µs.
CREATE OR REPLACE FUNCTION ratewise.decide_set(_keys bytea[], _kinds text[], _params bigint[], _now bigint,
    _cost bigint, _grace bigint, _once bytea, _marks bytea[], _horizon bigint, _lims bigint[])
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  n int := cardinality(_keys);
  clock bigint;
  t bigint;
  st bigint[];
  d record;
  c bigint;
  r bigint[] := '{}';
  all_ok boolean := true;
  longest bigint := 0;
  step text;
BEGIN
  IF _once IS NOT NULL THEN
    PERFORM ratewise.lock_once(_once);
    r := ratewise.once_seen(_once);
    IF r IS NOT NULL THEN
      RETURN r;
    END IF;
    r := '{}';
  END IF;
  -- One statement takes every row's lock, in key order: it creates a
  -- missing row, and locks an existing one (DO UPDATE locks the rows it
  -- meets even where its WHERE updates none). A row deleted meanwhile (by
  -- a reset or a sweep) is created again, so no limit goes unlocked.
  INSERT INTO ratewise.state AS s (key, state, expires, res)
  SELECT k, NULL, 0, '{}' FROM unnest(_keys) k ORDER BY k
  ON CONFLICT (key) DO UPDATE SET key = excluded.key WHERE false;
  clock := ratewise.now_us();
  t := coalesce(_now, clock);
  FOR i IN 1..n LOOP
    SELECT s.state INTO st FROM ratewise.state s WHERE s.key = _keys[i];
    EXECUTE format('SELECT * FROM ratewise.%I_step($1, $2, $3, 0, $4, $5, $6)', _kinds[i]) INTO d
      USING st, t, _cost, _params[3*i-2], _params[3*i-1], _params[3*i];
    r := r || ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at];
    all_ok := all_ok AND d.allowed;
  END LOOP;
  FOR i IN 1..n LOOP
    c := _cost;
    IF _cost > 0 AND NOT all_ok AND r[5*i-4] = 1 THEN
      c := 0;
    END IF;
    SELECT s.state INTO st FROM ratewise.state s WHERE s.key = _keys[i];
    EXECUTE format('SELECT * FROM ratewise.%I_step($1, $2, $3, 0, $4, $5, $6)', _kinds[i]) INTO d
      USING st, t, c, _params[3*i-2], _params[3*i-1], _params[3*i];
    IF c <> _cost THEN
      r[5*i-4:5*i] := ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at];
    END IF;
    IF d.new IS NOT NULL THEN
      UPDATE ratewise.state s SET state = d.new, expires = clock + greatest(d.keep, 1) + _grace WHERE s.key = _keys[i];
    END IF;
    longest := greatest(longest, r[5*i-1]);
  END LOOP;
  IF _once IS NOT NULL THEN
    FOR i IN 1..n LOOP
      r := r || ARRAY[_lims[i], _params[3*i-2], coalesce(_params[3*i], 0)];
    END LOOP;
    r := r || _cost;
    IF all_ok AND _cost > 0 THEN
      PERFORM ratewise.once_keep(_once, r, greatest(longest + _grace, _horizon));
      PERFORM ratewise.once_keep(m, '{1}', greatest(longest + _grace, _horizon)) FROM unnest(_marks) m;
    END IF;
  END IF;
  RETURN r;
END $$;

-- reset deletes the state at _key, or puts back its mark, the row at
-- _mark (a copy of the state the latest lease left, see __kind___lease),
-- while the mark may not be deleted yet. With a request ID (_once, or
-- NULL for none) it is applied once: unless the reset was applied before
-- under that ID, it applies and then keeps the ID for as long as the state
-- it deleted or put back would have counted, and at least _horizon µs. It
-- returns whether it applied the reset. It holds the key's lease lock
-- (lock_lease) from before it reads the mark until it commits, so that a
-- lease booked meanwhile is either in the mark it reads or after it.
CREATE OR REPLACE FUNCTION ratewise.reset(_key bytea, _mark bytea, _once bytea, _horizon bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  left_until bigint;
  m record;
BEGIN
  PERFORM ratewise.lock_lease(_key);
  IF _once IS NOT NULL THEN
    PERFORM ratewise.lock_once(_once);
    IF ratewise.once_seen(_once) IS NOT NULL THEN
      RETURN false;
    END IF;
  END IF;
  SELECT k.state, k.expires, k.res INTO m FROM ratewise.state k
    WHERE k.key = _mark AND k.state IS NOT NULL AND k.expires > ratewise.now_us();
  IF FOUND THEN
    SELECT s.expires INTO left_until FROM ratewise.state s WHERE s.key = _key FOR UPDATE;
    INSERT INTO ratewise.state AS s (key, state, expires, res) VALUES (_key, m.state, m.expires, m.res)
    ON CONFLICT (key) DO UPDATE SET (state, expires, res) = (excluded.state, excluded.expires, excluded.res);
    left_until := greatest(left_until, m.expires);
  ELSE
    DELETE FROM ratewise.state s WHERE s.key = _key RETURNING s.expires INTO left_until;
  END IF;
  IF _once IS NOT NULL THEN
    PERFORM ratewise.once_keep(_once, '{1}', greatest(coalesce(left_until - ratewise.now_us(), 0), _horizon));
  END IF;
  RETURN true;
END $$;

-- reset_once is reset without a mark, for the stores of schema 3 still
-- running while a newer one migrates: they call it for a reset with an ID.
CREATE OR REPLACE FUNCTION ratewise.reset_once(_key bytea, _once bytea, _horizon bigint)
RETURNS boolean LANGUAGE sql AS $$ SELECT ratewise.reset(_key, NULL, _once, _horizon) $$;

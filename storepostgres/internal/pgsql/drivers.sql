-- drivers.sql: the functions that drive a kind's step for the requests
-- that take more than one statement's work: a request with an ID, a refund.
-- It is a template, instantiated once per kind after the kind's file, with
-- __kind__ its name and the decision statement (pgsql.go's
-- upsert) on the functions' arguments. A plain decision needs no driver:
-- it is the upsert alone (see Decide).

-- __kind___once decides, or books (with a slack above 0), a request with a
-- request ID, once: it returns the outcome kept under _once if there is
-- one, and otherwise decides and, for an admission that charged, keeps
-- the outcome for as long as the charge counts (plus the grace), and at
-- least _horizon µs. The outcome is the decision's {allowed, remaining,
-- retry_after, reset_after, at, delay}, then the limit its Result reports,
-- the parameters it was decided under (p1, and p3 or 0) and its cost, so
-- that a retry made after the key's limit changed gets what it was first
-- charged under.
CREATE OR REPLACE FUNCTION ratewise.__kind___once(_key bytea, _once bytea, _now bigint, _cost bigint,
    _slack bigint, _p1 bigint, _p2 bigint, _p3 bigint, _grace bigint, _lim bigint, _horizon bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  r bigint[];
BEGIN
  PERFORM ratewise.lock_once(_once);
  r := ratewise.once_seen(_once);
  IF r IS NOT NULL THEN
    RETURN r;
  END IF;
  /*upsert*/ INTO r;
  r := r || ARRAY[_lim, _p1, coalesce(_p3, 0), _cost];
  IF r[1] = 1 AND _cost > 0 THEN
    PERFORM ratewise.once_keep(_once, r, greatest(r[4] + _grace, _horizon));
  END IF;
  RETURN r;
END $$;

-- __kind___lease books a lease's _cost units (store.Leaser): it decides,
-- or books with a slack above 0, as __kind___once does, with a request ID
-- (_once) or without one (NULL), and on admission copies the key's row to
-- _mark, its mark, which ratewise.reset puts back. It returns the
-- decision's {allowed, remaining, retry_after, reset_after, at, delay},
-- and with a request ID what __kind___once returns. It holds the key's
-- lease lock (ratewise.lock_lease), as a reset does.
CREATE OR REPLACE FUNCTION ratewise.__kind___lease(_key bytea, _mark bytea, _once bytea, _now bigint, _cost bigint,
    _slack bigint, _p1 bigint, _p2 bigint, _p3 bigint, _grace bigint, _lim bigint, _horizon bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  r bigint[];
BEGIN
  PERFORM ratewise.lock_lease(_key);
  IF _once IS NOT NULL THEN
    PERFORM ratewise.lock_once(_once);
    r := ratewise.once_seen(_once);
    IF r IS NOT NULL THEN
      RETURN r;
    END IF;
  END IF;
  /*upsert*/ INTO r;
  IF r[1] = 1 THEN
    INSERT INTO ratewise.state AS m (key, state, expires, res)
      SELECT _mark, s.state, s.expires, s.res FROM ratewise.state s WHERE s.key = _key
    ON CONFLICT (key) DO UPDATE SET (state, expires, res) = (excluded.state, excluded.expires, excluded.res);
  END IF;
  IF _once IS NOT NULL THEN
    r := r || ARRAY[_lim, _p1, coalesce(_p3, 0), _cost];
    IF r[1] = 1 THEN
      PERFORM ratewise.once_keep(_once, r, greatest(r[4] + _grace, _horizon));
    END IF;
  END IF;
  RETURN r;
END $$;

-- __kind___give gives back _n units that a request admitted at _at was
-- charged (the kind's refund), then inspects the key, and returns the
-- inspection's {allowed, remaining, retry_after, reset_after, at}. The
-- inspection writes nothing; a refund that changed the state keeps it for
-- the inspection's reset_after, at least until the time it decided at,
-- and as long as the refund asks.
--
-- With a request ID (_once), the refund is applied once: a refund that
-- changed the state keeps its outcome, followed by _lim, for as long as
-- the refunded charge could count (_window µs) and the state counts, and
-- a retry gets it again. _admitted are the once keys of the admission it
-- gives back, made with the same ID (a decision's or booking's, a set's):
-- while one of them exists, the refund applies, and it deletes them, so
-- that the request, retried, is charged again, and a refund of that new
-- admission applies in turn.
CREATE OR REPLACE FUNCTION ratewise.__kind___give(_key bytea, _now bigint, _at bigint, _n bigint,
    _p1 bigint, _p2 bigint, _p3 bigint, _grace bigint, _once bytea, _admitted bytea[], _lim bigint, _window bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  st bigint[];
  clock bigint;
  t bigint;
  back record;
  d record;
  r bigint[];
BEGIN
  IF _once IS NOT NULL THEN
    PERFORM ratewise.lock_once(_once);
    IF NOT EXISTS (SELECT 1 FROM ratewise.once o WHERE o.key = ANY(_admitted) AND o.expires > ratewise.now_us()) THEN
      r := ratewise.once_seen(_once);
      IF r IS NOT NULL THEN
        RETURN r;
      END IF;
    END IF;
  END IF;
  SELECT s.state INTO st FROM ratewise.state s WHERE s.key = _key FOR UPDATE;
  clock := ratewise.now_us();
  t := coalesce(_now, clock);
  SELECT * INTO back FROM ratewise.__kind___refund(st, t, _at, _n, _p1, _p2, _p3);
  IF back.new IS NOT NULL THEN
    st := back.new;
  END IF;
  SELECT * INTO d FROM ratewise.__kind___step(st, t, 0, 0, _p1, _p2, _p3);
  r := ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at];
  IF back.new IS NOT NULL THEN
    UPDATE ratewise.state s SET state = back.new,
      expires = clock + greatest(d.reset, d.at - t, coalesce(back.keep, 0), 1) + _grace
    WHERE s.key = _key;
  END IF;
  IF _once IS NOT NULL THEN
    r := r || _lim;
    IF back.new IS NOT NULL THEN
      PERFORM ratewise.once_keep(_once, r, greatest(d.reset, _window) + _grace);
      DELETE FROM ratewise.once o WHERE o.key = ANY(_admitted);
    END IF;
  END IF;
  RETURN r;
END $$;

-- __kind___decide_batch decides a batch of decisions without request IDs
-- in one transaction, in one round trip (see WithCoalescing): decision i
-- is on _keys[i], at _nows[i] (NULL for the server's clock), of cost
-- _costs[i], under the parameters _p1s[i]…_p3s[i], each the decision
-- statement as one decision alone runs it. PL/pgSQL prepares the step's
-- expressions once per transaction, and the batch commits once. The
-- caller orders the batch by key, keeping the order of each key's
-- decisions, so that batches take their rows' locks in one order and never
-- wait for each other in a cycle; a row stays locked until the batch
-- commits.
--
-- One decision's failure is its own. The decisions run in a block with an
-- exception handler, one subtransaction for the whole batch; when decision
-- i raises an error, the block's work is rolled back, decision i is
-- marked failed with its SQLSTATE and message (errors[i]), and the block
-- runs again without it, from the first decision. A batch of n decisions
-- with f failures runs at most (f + 1) n steps, and one without failures
-- pays one subtransaction. A cancel (the caller's deadline) is no
-- decision's error: it is not caught, and fails the batch.
--
-- The batch waits for a row another transaction holds at most
-- _lock_timeout (such as '100ms'): past it, the decision fails with
-- SQLSTATE 55P03 (lock_not_available), which the store sends again alone,
-- where it waits as long as its caller's deadline allows. So a row stuck
-- behind another transaction's lock delays the rest of a batch by at most
-- _lock_timeout, and each time the block runs again, a step.
--
-- It returns each decision's {allowed, remaining, retry_after,
-- reset_after, at, delay} in order (zeros for a failed decision), and
-- each decision's error, NULL for one that decided.
CREATE OR REPLACE FUNCTION ratewise.__kind___decide_batch(_keys bytea[], _nows bigint[], _costs bigint[],
    _p1s bigint[], _p2s bigint[], _p3s bigint[], _grace bigint, _lock_timeout text,
    OUT replies bigint[], OUT errors text[])
LANGUAGE plpgsql AS $$
DECLARE
  n int := cardinality(_keys);
  cur int;
  _key bytea;
  _now bigint;
  _cost bigint;
  _slack bigint := 0;
  _p1 bigint;
  _p2 bigint;
  _p3 bigint;
  r bigint[];
BEGIN
  PERFORM set_config('lock_timeout', _lock_timeout, true);
  errors := array_fill(NULL::text, ARRAY[n]);
  LOOP
    replies := '{}';
    BEGIN
      FOR i IN 1..n LOOP
        IF errors[i] IS NOT NULL THEN
          replies := replies || '{0,0,0,0,0,0}'::bigint[];
          CONTINUE;
        END IF;
        cur := i;
        _key := _keys[i];
        _now := _nows[i];
        _cost := _costs[i];
        _p1 := _p1s[i];
        _p2 := _p2s[i];
        _p3 := _p3s[i];
        /*upsert*/ INTO r;
        replies := replies || r;
      END LOOP;
      RETURN;
    EXCEPTION WHEN OTHERS THEN
      errors[cur] := SQLSTATE || ' ' || SQLERRM;
    END;
  END LOOP;
END $$;

-- __kind___batch is the batch function of schema 4, for the stores of
-- that version still running while a newer one migrates: __kind___decide_batch
-- with schema 4's lock timeout of 5s, where one decision's failure fails the
-- batch (the error rolls back every decision of the statement).
CREATE OR REPLACE FUNCTION ratewise.__kind___batch(_keys bytea[], _nows bigint[], _costs bigint[],
    _p1s bigint[], _p2s bigint[], _p3s bigint[], _grace bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  b record;
  failed text;
BEGIN
  SELECT * INTO b FROM ratewise.__kind___decide_batch(_keys, _nows, _costs, _p1s, _p2s, _p3s, _grace, '5s');
  SELECT e INTO failed FROM unnest(b.errors) e WHERE e IS NOT NULL LIMIT 1;
  IF failed IS NOT NULL THEN
    RAISE EXCEPTION 'ratewise: a decision of the batch failed: %', failed;
  END IF;
  RETURN b.replies;
END $$;

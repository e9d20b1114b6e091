-- sliding_log.sql: the exact sliding log (algorithms.SlidingLog), the step
-- of the Redis store's sliding_log.lua: log.sql's step with timestamps to
-- the microsecond (a quantum of 1µs). See log.sql for the state.
-- requires: log.sql

CREATE OR REPLACE FUNCTION ratewise.sliding_log_step(state bigint[], now bigint, cost bigint, slack bigint,
    lim bigint, win bigint, p3 bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  r record;
BEGIN
  -- A record variable, not SELECT … INTO: the call is then a simple
  -- expression, not a query run through SPI, some 5µs cheaper.
  r := ratewise.log_step(state, now, cost, lim, win, 1);
  allowed := r.allowed; remaining := r.remaining; retry := r.retry; reset := r.reset; at := r.at;
  new := r.new; keep := r.keep; delay := r.delay;
END $$;

CREATE OR REPLACE FUNCTION ratewise.sliding_log_refund(state bigint[], now bigint, at bigint, cost bigint,
    lim bigint, win bigint, p3 bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  r record;
BEGIN
  r := ratewise.log_refund(state, now, at, cost, win, 1);
  new := r.new; keep := r.keep;
END $$;

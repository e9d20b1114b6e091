-- sliding_window.sql: the sliding window counter (algorithms.SlidingWindow),
-- the step of the Redis store's sliding_window.lua: log.sql's step with
-- timestamps rounded down to their sub-window (p3 sub-windows per window),
-- one record per sub-window that admitted something. See log.sql for the
-- state.
-- requires: log.sql

CREATE OR REPLACE FUNCTION ratewise.sliding_window_step(state bigint[], now bigint, cost bigint, slack bigint,
    lim bigint, win bigint, sub bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  r record;
BEGIN
  -- A record variable, not SELECT … INTO: the call is then a simple
  -- expression, not a query run through SPI, some 5µs cheaper.
  r := ratewise.log_step(state, now, cost, lim, win, win / sub);
  allowed := r.allowed; remaining := r.remaining; retry := r.retry; reset := r.reset; at := r.at;
  new := r.new; keep := r.keep; delay := r.delay;
END $$;

CREATE OR REPLACE FUNCTION ratewise.sliding_window_refund(state bigint[], now bigint, at bigint, cost bigint,
    lim bigint, win bigint, sub bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  r record;
BEGIN
  r := ratewise.log_refund(state, now, at, cost, win, win / sub);
  new := r.new; keep := r.keep;
END $$;

-- gcra.sql: the generic cell rate algorithm (algorithms.GCRA), as redis-cell
-- runs it: the step of bucket.sql, whose state is the theoretical arrival
-- time. p1…p3 are the rate count, its period in µs and the burst.
-- requires: bucket.sql

CREATE OR REPLACE FUNCTION ratewise.gcra_step(state bigint[], now bigint, cost bigint, slack bigint,
    p1 bigint, p2 bigint, p3 bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT * FROM ratewise.bucket_step(state, now, cost, slack, p1, p2, p3)
$$;

CREATE OR REPLACE FUNCTION ratewise.gcra_refund(state bigint[], now bigint, at bigint, cost bigint,
    p1 bigint, p2 bigint, p3 bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT * FROM ratewise.bucket_refund(state, now, at, cost, p1, p2, p3)
$$;

-- token_bucket.sql: the token bucket (algorithms.TokenBucket): the step of
-- bucket.sql with the capacity as the burst. Its state is the time at which
-- the bucket is full again, which is the same fact as a fill level. p1…p3
-- are the refill count, its period in µs and the capacity.
-- requires: bucket.sql

CREATE OR REPLACE FUNCTION ratewise.token_bucket_step(state bigint[], now bigint, cost bigint, slack bigint,
    p1 bigint, p2 bigint, p3 bigint,
    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
    OUT new bigint[], OUT keep bigint, OUT delay bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT * FROM ratewise.bucket_step(state, now, cost, slack, p1, p2, p3)
$$;

CREATE OR REPLACE FUNCTION ratewise.token_bucket_refund(state bigint[], now bigint, at bigint, cost bigint,
    p1 bigint, p2 bigint, p3 bigint, OUT new bigint[], OUT keep bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT * FROM ratewise.bucket_refund(state, now, at, cost, p1, p2, p3)
$$;

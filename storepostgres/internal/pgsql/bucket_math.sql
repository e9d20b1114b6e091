-- bucket_math.sql: the exact products bucket.sql needs.

-- bucket_mul_div and bucket_mul_mod return floor(a × b / c) and a × b mod c
-- for 0 <= a, b and 0 < c, as Go's mulDiv does: in bigint when both factors
-- are below 2^31.5, so that the product is below 2^63, else in numeric.
-- LANGUAGE sql with one expression, so the planner inlines them into the
-- steps' expressions.
CREATE OR REPLACE FUNCTION ratewise.bucket_mul_div(a bigint, b bigint, c bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN a <= 3037000499 AND b <= 3037000499 THEN a * b / c
    ELSE div(a::numeric * b, c)::bigint END
$$;

CREATE OR REPLACE FUNCTION ratewise.bucket_mul_mod(a bigint, b bigint, c bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN a <= 3037000499 AND b <= 3037000499 THEN a * b % c
    ELSE mod(a::numeric * b, c)::bigint END
$$;

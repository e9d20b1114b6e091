-- schema.sql: the PostgreSQL store's schema, ratewise: its tables, its
-- clock and its drivers. Every statement may run again on a schema that
-- exists: tables are created if missing, functions replaced.

CREATE SCHEMA IF NOT EXISTS ratewise;

-- state holds one row per key: the key's state, as its kind's step reads
-- and writes it (NULL for none), the time on the server's clock (µs since
-- the Unix epoch) from which the row may be deleted, and the result of the
-- key's latest decision, which the decision's statement returns (see
-- upsert in pgsql.go): {allowed (1 or 0), remaining, retry_after,
-- reset_after, at, delay}. Decisions update rows in place, one version
-- each; the fill factor leaves room on each page for the next version, so
-- that updates stay on their page (HOT) and need no index entry.
CREATE /*UNLOGGED*/ TABLE IF NOT EXISTS ratewise.state (
  key bytea PRIMARY KEY,
  state bigint[],
  expires bigint NOT NULL,
  res bigint[] NOT NULL
) WITH (fillfactor = 70);

-- once holds the outcome of a request made with a request ID, under the
-- key's key followed by a kind of request and the ID (see decide.go), until
-- expires on the server's clock: a request that finds its ID here gets
-- that outcome again and changes nothing.
CREATE /*UNLOGGED*/ TABLE IF NOT EXISTS ratewise.once (
  key bytea PRIMARY KEY,
  reply bigint[] NOT NULL,
  expires bigint NOT NULL
);

-- meta holds the version of the schema (pgsql.Version) and the oldest
-- version of the store whose statements keep working against it
-- (pgsql.Compatible), one row.
CREATE TABLE IF NOT EXISTS ratewise.meta (version int NOT NULL);
ALTER TABLE ratewise.meta ADD COLUMN IF NOT EXISTS compatible int;

-- now_us reads the server's clock, in µs since the Unix epoch: the time of
-- the call, not of the transaction's start, so that a decision made after
-- waiting for a row's lock decides at the time it got it.
CREATE OR REPLACE FUNCTION ratewise.now_us() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;

-- lock_once serialises the requests that carry one request ID, until the
-- end of the transaction, so that a retry racing its first attempt waits
-- for its outcome instead of deciding again.
CREATE OR REPLACE FUNCTION ratewise.lock_once(_once bytea) RETURNS void
LANGUAGE sql VOLATILE AS
$$ SELECT pg_advisory_xact_lock(hashtextextended(encode(_once, 'hex'), 7305)) $$;

-- lock_lease serialises a key's lease bookings and resets, until the end
-- of the transaction: a reset reads the key's mark, which a booking
-- writes after it locks the key's row (see ratewise.reset).
CREATE OR REPLACE FUNCTION ratewise.lock_lease(_key bytea) RETURNS void
LANGUAGE sql VOLATILE AS
$$ SELECT pg_advisory_xact_lock(hashtextextended(encode(_key, 'hex'), 7306)) $$;

-- once_seen returns the outcome kept under once, or NULL.
CREATE OR REPLACE FUNCTION ratewise.once_seen(_once bytea) RETURNS bigint[]
LANGUAGE sql VOLATILE AS
$$ SELECT o.reply FROM ratewise.once o WHERE o.key = _once AND o.expires > ratewise.now_us() $$;

-- once_keep keeps reply under once for us µs of the server's clock.
CREATE OR REPLACE FUNCTION ratewise.once_keep(_once bytea, _reply bigint[], _us bigint) RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO ratewise.once AS o (key, reply, expires) VALUES (_once, _reply, ratewise.now_us() + greatest(_us, 1))
  ON CONFLICT (key) DO UPDATE SET reply = excluded.reply, expires = excluded.expires
$$;

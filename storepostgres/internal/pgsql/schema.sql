-- schema.sql: the PostgreSQL store's schema, ratewise.
CREATE SCHEMA IF NOT EXISTS ratewise;

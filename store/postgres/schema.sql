-- The tables of elicitvault's PostgreSQL store (store/postgres), schema
-- version 1.
--
-- Migrate (and so "elicitvault migrate", and "elicitvault serve" unless
-- --migrate=false) runs this file exactly as it is (it is embedded in the
-- package) on a database without elicitvault_schema, inside one
-- transaction under an advisory lock, after SET LOCAL search_path TO the
-- configured schema when WithSchema names one. An operator may run it
-- instead, on an empty database:
--
--     psql "$DATABASE_URL" -1 -f schema.sql
--
-- Columns:
--
--   key         the store key, byte for byte as the caller gave it. Keys are
--               opaque (keyed HMACs), so they are bytes, not text: any key
--               fits, and ordering (for Scan's keyset pagination) is by byte.
--   value       the value, opaque sealed bytes.
--   expires_at  the absolute expiry. A row with expires_at <= now() is
--               expired: every read treats it as absent, and the store's
--               cleanup deletes it. now() is the database server's clock.
CREATE TABLE IF NOT EXISTS elicitvault_entries (
    key        bytea       PRIMARY KEY,
    value      bytea       NOT NULL,
    expires_at timestamptz NOT NULL
);

-- The cleanup finds expired rows by expiry.
CREATE INDEX IF NOT EXISTS elicitvault_entries_expires_at
    ON elicitvault_entries (expires_at);

-- The schema version, in one row. Migrate reads it to know which
-- migrations a database lacks, and refuses a version newer than its own;
-- the store refuses one too when it starts.
CREATE TABLE IF NOT EXISTS elicitvault_schema (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version integer NOT NULL
);

INSERT INTO elicitvault_schema (version) VALUES (1) ON CONFLICT (one) DO NOTHING;

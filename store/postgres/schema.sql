-- The table of elicitvault's PostgreSQL store (store/postgres), version 1.
--
-- Migrate runs this file exactly as it is (it is embedded in the package),
-- inside one transaction, after SET LOCAL search_path TO the configured
-- schema when WithSchema names one. An operator may run it instead:
--
--     psql "$DATABASE_URL" -f schema.sql
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

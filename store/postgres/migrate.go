package postgres

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// schemaSQL creates the store's table. It is schema.sql, embedded, so that
// what Migrate runs and what operators read cannot drift apart.
//
//go:embed schema.sql
var schemaSQL string

// A Beginner begins transactions: *pgxpool.Pool and *pgx.Conn are
// Beginners.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// migrateLock is the key of the transaction-level advisory lock that
// Migrate holds, so that servers starting together migrate one at a time.
const migrateLock = 0x6576_6d69_6772_6174 // "evmigrat"

// Migrate creates the store's table and index if they do not exist, by
// running schema.sql in one transaction. With WithSchema it first creates
// that schema if it does not exist, and creates the table in it. Migrate
// is safe to run again, and from several processes at once. Options other
// than WithSchema are ignored.
//
// db is usually the *pgxpool.Pool of the Store, or a *pgx.Conn. Migrate
// needs the privilege to create tables (and schemas, with
// WithSchema); a Store needs only to read and write the table. Run it at
// deployment, or before New.
func Migrate(ctx context.Context, db Beginner, opts ...Option) error {
	c := newConfig(opts)
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLock)); err != nil {
			return err
		}
		if c.schema != "" {
			schema := pgx.Identifier{c.schema}.Sanitize()
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+schema); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, schemaSQL)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

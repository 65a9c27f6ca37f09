package postgres

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// schemaSQL creates the store's tables at SchemaVersion. It is schema.sql,
// embedded, so that what Migrate runs and what operators read cannot drift
// apart.
//
//go:embed schema.sql
var schemaSQL string

// SchemaVersion is the version of the schema this package reads and
// writes. Migrate records it in the table elicitvault_schema.
const SchemaVersion = 1

// versionTable holds the schema version, in one row.
const versionTable = "elicitvault_schema"

// migrations[i] brings a database from schema version i to i+1. Version 0
// is a database without elicitvault_schema: an empty one, or one made by a
// release that did not record versions (its table is version 1's, which
// schema.sql creates only if it does not exist).
var migrations = []string{schemaSQL}

// ErrNewerSchema is returned, wrapped, by Migrate, New and NewFromPool when
// the database's schema version is newer than SchemaVersion: a newer
// release of elicitvault migrated it, and this one may not know its
// tables. The error text gives both versions.
var ErrNewerSchema = errors.New("the database's schema is newer than this version of elicitvault knows")

// ErrNotMigrated is returned, wrapped, by New and NewFromPool when the
// store's table does not exist: run Migrate (elicitvault migrate) or
// schema.sql first.
var ErrNotMigrated = errors.New("no such table; run Migrate or schema.sql first")

// migrateLock is the key of the transaction-level advisory lock that
// Migrate holds, so that servers starting together migrate one at a time.
const migrateLock = 0x6576_6d69_6772_6174 // "evmigrat"

// Migrate brings the store's tables to SchemaVersion, in one transaction
// under an advisory lock: it creates them in an empty database, runs the
// migrations a database at an older version lacks, and does nothing to a
// database already at SchemaVersion. A database at a newer version is
// refused with ErrNewerSchema, untouched. With Options.Schema it first creates
// that schema if it does not exist, and works in it. Migrate is safe to run
// again, and from several processes at once. Options other than Schema
// are ignored.
//
// db is what begins its transaction: usually the *pgxpool.Pool of the
// Store, or a *pgx.Conn. Migrate
// needs the privilege to create tables (and schemas, with Options.Schema); a
// Store needs only to read and write them. Run it at deployment, or before
// New.
func Migrate(ctx context.Context, db interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, opts *Options) error {
	c := opts.config()
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
		// Under the lock, this reads what an earlier Migrate committed.
		v, err := schemaVersion(ctx, tx, pgx.Identifier{versionTable}.Sanitize())
		if err != nil {
			return err
		}
		if err := checkVersion(v); err != nil {
			return err
		}
		if v == SchemaVersion {
			return nil
		}
		for _, m := range migrations[v:] {
			if _, err := tx.Exec(ctx, m); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{versionTable}.Sanitize()+
			" (version) VALUES ($1) ON CONFLICT (one) DO UPDATE SET version = excluded.version", SchemaVersion)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// querier runs a query: pgx.Tx, *pgx.Conn and *pgxpool.Pool are queriers.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// schemaVersion returns the version recorded in table (a quoted name,
// qualified or found through the search_path), or 0 when there is no such
// table or it holds no row.
func schemaVersion(ctx context.Context, q querier, table string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	return v, nil
}

// checkVersion refuses a schema version newer than SchemaVersion.
func checkVersion(v int) error {
	if v > SchemaVersion {
		return fmt.Errorf("schema version %d, but this version of elicitvault knows versions up to %d: "+
			"run the elicitvault release that migrated the database, or a later one: %w", v, SchemaVersion, ErrNewerSchema)
	}
	return nil
}

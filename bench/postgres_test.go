package bench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
)

// BenchmarkPostgres measures every store operation on PostgreSQL beside the
// raw pgx statements it needs (the same SQL, see store/postgres's README),
// on one pool, and the throughput of full round trips between two stores.
//
//	ELICITVAULT_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test -run XXX -bench Postgres ./bench
func BenchmarkPostgres(b *testing.B) {
	benchBackend(b, postgresURLEnv, postgresOps, benchSchema, newPostgresStore)
}

// benchSchema migrates a schema of its own for tb, dropped when tb ends.
func benchSchema(tb testing.TB, url string) string {
	ctx := context.Background()
	schema := "evbench_" + hex.EncodeToString([]byte(storeKey()[:6]))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if err := evpostgres.Migrate(ctx, conn, &evpostgres.Options{Schema: schema}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("dropping the schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dropping the schema: %v", err)
		}
	})
	return schema
}

// newPostgresStore returns a store with a pool of its own.
func newPostgresStore(tb testing.TB, url, schema string) store.Store {
	s, err := evpostgres.New(context.Background(), url, &evpostgres.Options{Schema: schema, CleanupInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// postgresOps returns the operations of a store and of the raw statements
// on one pgx pool, with the same keys and the store's SQL.
func postgresOps(tb testing.TB, url string) []storeOp {
	ctx := context.Background()
	schema := benchSchema(tb, url)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		tb.Fatalf("PostgreSQL: %v", err)
	}
	tb.Cleanup(pool.Close)
	s, err := evpostgres.NewFromPool(ctx, pool, &evpostgres.Options{Schema: schema, CleanupInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })

	t := pgx.Identifier{schema, "elicitvault_entries"}.Sanitize()
	var (
		put = `INSERT INTO ` + t + ` (key, value, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`
		get         = `SELECT value FROM ` + t + ` WHERE key = $1 AND expires_at > now()`
		take        = `DELETE FROM ` + t + ` WHERE key = $1 AND expires_at > now() RETURNING value`
		putIfAbsent = `INSERT INTO ` + t + ` AS e (key, value, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
			WHERE e.expires_at <= now()`
		swap = `WITH old AS (
				SELECT value, expires_at > now() AS live FROM ` + t + ` WHERE key = $1 FOR UPDATE
			), upd AS (
				UPDATE ` + t + ` SET value = $2, expires_at = $3 WHERE key = $1 AND EXISTS (SELECT FROM old) RETURNING 1
			), ins AS (
				INSERT INTO ` + t + ` (key, value, expires_at) SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT FROM old)
				ON CONFLICT (key) DO NOTHING RETURNING 1
			)
			SELECT (SELECT value FROM old WHERE live), EXISTS (SELECT FROM old WHERE live),
				EXISTS (SELECT FROM upd) OR EXISTS (SELECT FROM ins)`
		cas = `UPDATE ` + t + ` SET value = $3, expires_at = $4
			WHERE key = $1 AND value = $2 AND expires_at > now()`
	)

	channel := storeKey()
	// The store's channel name (store/postgres's README), computed once on
	// the raw side.
	sum := sha256.Sum256([]byte(schema + "\x00" + channel))
	pgChannel := "ev_" + hex.EncodeToString(sum[:16])
	return storeOps(s, channel, rawStore[[]byte]{
		key: func(key string) []byte { return []byte(key) },
		put: func(ctx context.Context, key, value []byte, expiry time.Time) error {
			_, err := pool.Exec(ctx, put, key, value, expiry)
			return err
		},
		get: func(ctx context.Context, key []byte) error {
			var v []byte
			return pool.QueryRow(ctx, get, key).Scan(&v)
		},
		putMany: func(tb testing.TB, keys [][]byte, value []byte, expiry time.Time) {
			_, err := pool.Exec(context.Background(), `INSERT INTO `+t+` (key, value, expires_at) SELECT k, $2, $3 FROM unnest($1::bytea[]) AS k`,
				keys, value, expiry)
			if err != nil {
				tb.Fatal(err)
			}
		},
		take: func(ctx context.Context, key []byte) error {
			var v []byte
			return pool.QueryRow(ctx, take, key).Scan(&v)
		},
		putIfAbsent: func(ctx context.Context, key, value []byte, expiry time.Time) (bool, error) {
			tag, err := pool.Exec(ctx, putIfAbsent, key, value, expiry)
			return tag.RowsAffected() == 1, err
		},
		putIfAbsentGet: func(ctx context.Context, key, other, value []byte, expiry time.Time) (bool, error) {
			b := &pgx.Batch{}
			var won bool
			b.Queue(putIfAbsent, key, value, expiry).Exec(func(tag pgconn.CommandTag) error {
				won = tag.RowsAffected() == 1
				return nil
			})
			b.Queue(get, other).Query(func(rows pgx.Rows) error {
				var v []byte
				for rows.Next() {
					if err := rows.Scan(&v); err != nil {
						return err
					}
				}
				return rows.Err()
			})
			return won, pool.SendBatch(ctx, b).Close()
		},
		swap: func(ctx context.Context, key, value []byte, expiry time.Time) error {
			for {
				var old []byte
				var live, written bool
				if err := pool.QueryRow(ctx, swap, key, value, expiry).Scan(&old, &live, &written); err != nil || written {
					return err
				}
			}
		},
		cas: func(ctx context.Context, key, old, value []byte, expiry time.Time) (bool, error) {
			tag, err := pool.Exec(ctx, cas, key, old, value, expiry)
			return tag.RowsAffected() == 1, err
		},
		publish: func(ctx context.Context, value []byte) error {
			_, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", pgChannel, base64.StdEncoding.EncodeToString(value))
			return err
		},
	})
}

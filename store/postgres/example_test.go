package postgres_test

import (
	"context"
	"log"
	"time"

	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A Store on a PostgreSQL database whose table was created (see
// ExampleMigrate). It is a [store.Store] like any other: see store's
// Example for a node waiting for a result that any node writes. (The
// example needs a PostgreSQL server, so it is compiled but not run.)
func Example() {
	s, err := evpostgres.New(context.Background(), "postgres://elicitvault@127.0.0.1:5432/app?sslmode=verify-full", nil)
	if err != nil {
		log.Fatal(err) // for instance: postgres: elicitvault_entries: no such table; run Migrate or schema.sql first
	}
	defer s.Close()
}

// Migrate creates the table, here in a schema of its own, before the store
// uses it. The store shares the program's pool.
func ExampleMigrate() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://admin@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := evpostgres.Migrate(ctx, pool, &evpostgres.Options{Schema: "elicitvault"}); err != nil {
		log.Fatal(err)
	}
	s, err := evpostgres.NewFromPool(ctx, pool, &evpostgres.Options{Schema: "elicitvault", CleanupInterval: 5 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
}

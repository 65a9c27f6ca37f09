package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A node waits for a result that any node may write: it subscribes before
// it asks, and reads the store again after every message and every
// resubscription, so that a lost message delays nothing. (The example needs
// a PostgreSQL server, so it is compiled but not run.)
func Example() {
	ctx := context.Background()
	s, err := evpostgres.New(ctx, "postgres://elicitvault@127.0.0.1:5432/app?sslmode=verify-full", nil)
	if err != nil {
		log.Fatal(err) // for instance: postgres: elicitvault_entries: no such table; run Migrate or schema.sql first
	}
	defer s.Close()

	const key, channel = "result-key", "result-channel"
	sub, err := s.Subscribe(ctx, channel)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()

	// Elsewhere, the answer is written first, then announced.
	go func() {
		s.Put(ctx, key, []byte("answer"), time.Now().Add(5*time.Minute))
		s.Publish(ctx, channel, []byte("ready"))
	}()

	timeout := time.After(5 * time.Minute)
	for {
		v, err := s.Take(ctx, key)
		if err == nil {
			fmt.Printf("%s\n", v)
			return
		}
		if !errors.Is(err, store.ErrNotFound) {
			log.Fatal(err)
		}
		select {
		case <-sub.Messages(): // a message or a Resubscribed notice: read again
		case <-timeout:
			log.Fatal("no answer")
		}
	}
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

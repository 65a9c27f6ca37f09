package postgres_test

import (
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/postgres/pgtest"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestServerRestartedUnderLoad runs storetest.RunRestart on a PostgreSQL
// server of the test's own, stopped with a fast shutdown.
func TestServerRestartedUnderLoad(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunRestart(t, storetest.Server{
		Name: "postgres",
		Open: func(t *testing.T) store.Store {
			s, err := evpostgres.New(t.Context(), "postgres://postgres@"+srv.Addr()+"/postgres?sslmode=disable", &evpostgres.Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return s
		},
		Stops: []func(*testing.T){func(t *testing.T) { srv.Stop(t) }},
		Start: func(t *testing.T) { srv.Restart(t) },
	})
}

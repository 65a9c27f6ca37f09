package postgres_test

import (
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestBackend runs storetest's conformance suite, and its tests that need
// a second process on the same data and connections cut at the server (pg_terminate_backend of
// the store's connections, by their application_name).
func TestBackend(t *testing.T) {
	url := serverURL(t)
	storetest.RunBackend(t, storetest.Backend{
		Name: "postgres",
		URL:  url,
		Open: func(t *testing.T) (store.Store, string, storetest.Cuts) {
			conn := connect(t, url)
			name := randomName("app")
			s, schema := openStore(t, withApplicationName(t, url, name))
			return s, schema, storetest.Cuts{
				Subscriptions: func(t *testing.T) int { return terminate(t, conn, name+"/listener") },
				All:           func(t *testing.T) int { return terminate(t, conn, name) },
			}
		},
		Reopen: func(t *testing.T, schema, url string) (store.Store, error) {
			return evpostgres.New(t.Context(), url, &evpostgres.Options{Schema: schema, Logger: testLogger(t)})
		},
	})
}

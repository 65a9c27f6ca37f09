package postgres_test

import (
	neturl "net/url"
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestBackend runs storetest's tests that need a second process on the
// same data and connections cut at the server (pg_terminate_backend of
// the store's connections, by their application_name).
func TestBackend(t *testing.T) {
	url := serverURL(t)
	storetest.RunBackend(t, storetest.Backend{
		Name: "postgres",
		Open: func(t *testing.T) (store.Store, string, storetest.Cuts) {
			conn := connect(t, url)
			name := randomName("app")
			s, schema := openStore(t, withApplicationName(t, url, name))
			return s, schema, storetest.Cuts{
				Subscriptions: func(t *testing.T) int { return terminate(t, conn, name+"/listener") },
				All:           func(t *testing.T) int { return terminate(t, conn, name) },
			}
		},
		Reopen: func(t *testing.T, schema string) store.Store {
			s, err := evpostgres.New(t.Context(), url, &evpostgres.Options{Schema: schema, Logger: testLogger(t)})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			storetest.CloseAtEnd(t, s)
			return s
		},
		Addr: hostOf(t, url),
		ReopenAt: func(t *testing.T, ns, addr string) store.Store {
			at := withHost(t, url, addr)
			s, err := evpostgres.New(t.Context(), at, &evpostgres.Options{Schema: ns, Logger: testLogger(t)})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			storetest.CloseAtEnd(t, s)
			return s
		},
	})
}

// hostOf returns the host:port of rawURL.
func hostOf(t *testing.T, rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// withHost returns rawURL with its host:port replaced by addr.
func withHost(t *testing.T, rawURL, addr string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

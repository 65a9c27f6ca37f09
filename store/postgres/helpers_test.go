package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// randomName returns a name no other test uses, valid as an unquoted
// identifier.
func randomName(kind string) string {
	b := make([]byte, 8)
	rand.Read(b) // never fails
	return "evtest_" + kind + "_" + hex.EncodeToString(b)
}

// serverURL returns the test server's URL, from ELICITVAULT_POSTGRES_URL, or
// skips t (see storetest.Skip).
func serverURL(t testing.TB) string {
	t.Helper()
	return storetest.ServerURL(t, "ELICITVAULT_POSTGRES_URL", "PostgreSQL")
}

// withApplicationName returns rawURL with its application_name parameter
// set, so that the store's connections can be found in pg_stat_activity.
func withApplicationName(t testing.TB, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("test server URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// connect returns a connection to the test server, closed when t ends.
func connect(t testing.TB, rawURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), rawURL)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(ctx)
	})
	return conn
}

// newSchema migrates a new schema of the test server, and drops it when t
// ends.
func newSchema(t testing.TB, rawURL string) string {
	t.Helper()
	schema := randomName("schema")
	conn, err := pgx.Connect(t.Context(), rawURL)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(context.Background())
	if err := evpostgres.Migrate(t.Context(), conn, &evpostgres.Options{Schema: schema}); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { dropSchema(t, rawURL, schema) })
	return schema
}

func dropSchema(t testing.TB, rawURL, schema string) {
	cleanUp(t, rawURL, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

// cleanUp runs sql on a connection of its own to the test server, where
// t's context may have ended already; it fails t if that does not work.
func cleanUp(t testing.TB, rawURL, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		t.Errorf("cleaning up: %v", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Errorf("cleaning up: %v", err)
	}
}

// testLogger returns a logger that writes to t's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// openStore opens a store in a schema of its own, dropped when t ends,
// after the store is closed; opts, when given, sets the other options.
func openStore(t testing.TB, rawURL string, opts ...evpostgres.Options) (store.Store, string) {
	t.Helper()
	schema := newSchema(t, rawURL)
	var o evpostgres.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Schema, o.Logger = schema, testLogger(t)
	s, err := evpostgres.New(t.Context(), rawURL, &o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	storetest.CloseAtEnd(t, s)
	return s, schema
}

// terminate terminates the server processes of the connections whose
// application_name starts with prefix, and returns how many it terminated.
func terminate(t testing.TB, conn *pgx.Conn, prefix string) int {
	t.Helper()
	rows, err := conn.Query(t.Context(),
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE starts_with(application_name, $1)", prefix)
	if err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	oks, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	n := 0
	for _, ok := range oks {
		if ok {
			n++
		}
	}
	return n
}

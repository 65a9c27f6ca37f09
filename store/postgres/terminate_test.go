package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// terminatePrefix terminates the server processes of every connection
// whose application_name starts with prefix, and returns how many it
// terminated.
func terminatePrefix(t *testing.T, conn *pgx.Conn, prefix string) int {
	t.Helper()
	var n int
	err := conn.QueryRow(t.Context(),
		"SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE starts_with(application_name, $1)",
		prefix).Scan(&n)
	if err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	return n
}

// TestConnectionsTerminatedUnderLoad terminates every server process of two
// stores — the waiter's and the resolver's pooled connections and
// listeners — five times, during a burst of every operation, while a waiter
// waits for a result. Operations on a terminated connection fail with a
// wrapped error, at most one per terminated connection; the same stores
// work again right after, the waiter is resubscribed after each round, and
// it gets the result written after the last. Nothing is left running after
// Close.
//
// This is what a restart does to a client, except that the server answers
// again at once; TestServerRestartedUnderLoad restarts a server of the
// test's own.
func TestConnectionsTerminatedUnderLoad(t *testing.T) {
	url := serverURL(t)
	// Counted from before the admin connection, which is closed before the
	// count is checked: pgx may leave its background reader blocked on an
	// idle connection until it closes.
	storetest.CheckNoLeaks(t)
	admin := connect(t, url)
	schema := newSchema(t, url)
	ctx := t.Context()
	name := randomName("app")
	open := func(role string) *store.Portable {
		s, err := evpostgres.New(ctx, withApplicationName(t, url, name+"-"+role), &evpostgres.Options{Schema: schema, Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	}
	s := open("waiter")
	defer s.Close()
	resolver := open("resolver")
	defer resolver.Close()

	waiter := storetest.StartWaiter(t, ctx, s, "result-channel", "result")
	defer waiter.Close()

	burst := storetest.StartBurst(ctx, 8, []store.Store{s, resolver}, func(w int, err error) {
		if !strings.HasPrefix(err.Error(), "postgres: ") || errors.Is(err, store.ErrClosed) ||
			errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("worker %d: %v, want the connection's error, wrapped", w, err)
		}
	})

	terminated := 0
	for round := range 5 {
		time.Sleep(100 * time.Millisecond) // the burst runs on live connections
		before := waiter.Resubscriptions()
		n := terminatePrefix(t, admin, name+"-")
		if n < 3 { // at least the waiter's listener and a pooled connection of each store
			t.Fatalf("round %d: terminated %d connections, want every connection of both stores", round, n)
		}
		terminated += n
		at := time.Now()
		deadline := at.Add(15 * time.Second)
		if !waiter.AwaitResubscribed(before, deadline) {
			t.Fatalf("round %d: the waiter's subscription was not resubscribed", round)
		}
		if w := burst.AwaitRecovered(at, deadline); w >= 0 {
			t.Fatalf("round %d: burst worker %d did not recover", round, w)
		}
	}
	failures := burst.Stop()
	t.Logf("%d operations failed on %d terminated connections", failures, terminated)
	if int(failures) > terminated {
		t.Errorf("%d operations failed, more than the %d connections terminated", failures, terminated)
	}

	if err := resolver.Put(ctx, "result", []byte("the answer"), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Publish(ctx, "result-channel", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if v := waiter.Result(t, 10*time.Second); string(v) != "the answer" {
		t.Fatalf("the waiter got %q", v)
	}
	waiter.Close()
	if err := resolver.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

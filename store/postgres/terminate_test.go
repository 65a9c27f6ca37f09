package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	admin := connect(t, url)
	schema := newSchema(t, url)
	storetest.CheckNoLeaks(t)
	ctx := t.Context()
	name := randomName("app")
	open := func(role string) *evpostgres.Store {
		s, err := evpostgres.New(ctx, withApplicationName(t, url, name+"-"+role),
			evpostgres.WithSchema(schema), evpostgres.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	}
	s := open("waiter")
	defer s.Close()
	resolver := open("resolver")
	defer resolver.Close()

	sub, err := s.Subscribe(ctx, "result-channel")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var resubscribed atomic.Int32
	result := make(chan []byte, 1)
	go func() {
		for m := range sub.Messages() {
			if m.Resubscribed {
				resubscribed.Add(1)
			}
			if v, err := s.Get(ctx, "result"); err == nil {
				result <- v
				return
			}
		}
	}()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int64
	lastOK := make([]atomic.Int64, 8) // per worker, when an operation last succeeded
	for w := range lastOK {
		st := s
		if w%2 == 1 {
			st = resolver
		}
		wg.Go(func() {
			key := fmt.Sprintf("burst-%d", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				octx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := burstOp(octx, st, key, i)
				cancel()
				if err != nil {
					failures.Add(1)
					if !strings.HasPrefix(err.Error(), "postgres: ") || errors.Is(err, store.ErrClosed) ||
						errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidArgument) {
						t.Errorf("worker %d: %v, want the connection's error, wrapped", w, err)
					}
					continue
				}
				lastOK[w].Store(time.Now().UnixNano())
			}
		})
	}

	terminated := 0
	for round := range 5 {
		time.Sleep(100 * time.Millisecond) // the burst runs on live connections
		before := resubscribed.Load()
		n := terminatePrefix(t, admin, name+"-")
		if n < 3 { // at least the waiter's listener and a pooled connection of each store
			t.Fatalf("round %d: terminated %d connections, want every connection of both stores", round, n)
		}
		terminated += n
		at := time.Now()
		deadline := at.Add(15 * time.Second)
		for resubscribed.Load() == before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the waiter's subscription was not resubscribed", round)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for w := range lastOK {
			for lastOK[w].Load() < at.UnixNano() {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: burst worker %d did not recover", round, w)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d operations failed on %d terminated connections", failures.Load(), terminated)
	if int(failures.Load()) > terminated {
		t.Errorf("%d operations failed, more than the %d connections terminated", failures.Load(), terminated)
	}

	if err := resolver.Put(ctx, "result", []byte("the answer"), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Publish(ctx, "result-channel", []byte{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-result:
		if string(v) != "the answer" {
			t.Fatalf("the waiter got %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the result")
	}
	sub.Close()
	if err := resolver.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// burstOp runs the i-th operation of a burst worker on key.
func burstOp(ctx context.Context, s store.Store, key string, i int) error {
	exp := time.Now().Add(time.Minute)
	v := []byte(strconv.Itoa(i))
	var err error
	switch i % 9 {
	case 0:
		err = s.Put(ctx, key, v, exp)
	case 1:
		_, err = s.Get(ctx, key)
	case 2:
		_, err = s.Swap(ctx, key, v, exp)
	case 3:
		_, err = s.CompareAndSwap(ctx, key, v, []byte("x"), exp)
	case 4:
		_, err = s.Take(ctx, key)
	case 5:
		_, err = s.PutIfAbsent(ctx, key, v, exp)
	case 6:
		err = s.Delete(ctx, key)
	case 7:
		_, _, err = s.Scan(ctx, "", 10)
	case 8:
		err = s.Publish(ctx, "burst", v)
	}
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return err
}

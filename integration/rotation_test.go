package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

// newTestStore opens a store of backend ("redis" or "postgres") in a
// namespace of its own (a key prefix, a schema), removed when t ends.
func newTestStore(t *testing.T, backend string) store.Store {
	t.Helper()
	switch backend {
	case "redis":
		s := mustOpen(t, "redis", serverURL(t, redisEnv), "evinteg-"+randomName()+":")
		t.Cleanup(func() { fronttest.Empty(t, s) })
		return s
	case "postgres":
		url := serverURL(t, postgresEnv)
		schema, _ := migratedSchema(t, url, "evinteg_")
		return mustOpen(t, "postgres", url, schema)
	}
	t.Fatalf("unknown backend %q", backend)
	return nil
}

func pendingBinding(i int) envelope.Binding {
	return envelope.Binding{Purpose: "elicit/pending", Subject: fmt.Sprintf("user-%d", i%7), SessionID: fmt.Sprintf("session-%d", i), RecordID: fmt.Sprintf("elicitation-%d", i)}
}

func pendingContent(i int) string { return fmt.Sprintf("answer-%d", i) }

// parallel runs f(i) for every i below n on workers goroutines and returns
// the first error; after it, no f starts.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				mu.Lock()
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%d: %w", i, err)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// TestRewrapUnderLoad rotates 10,000 in-flight records on each backend from
// secret A to B while other goroutines resolve (take and open) a third of
// them: none is lost, none fails to open, none can be taken twice, no
// record remains under A's key ID, and B alone opens every record left.
func TestRewrapUnderLoad(t *testing.T) {
	for _, backend := range []string{"redis", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			n := 10000
			if testing.Short() {
				n = 2000
			}
			ctx := context.Background()
			s := newTestStore(t, backend)
			a, err := ring.New([]byte(secretA), nil)
			if err != nil {
				t.Fatal(err)
			}
			ba, err := ring.New([]byte(secretB), [][]byte{[]byte(secretA)})
			if err != nil {
				t.Fatal(err)
			}
			b, err := ring.New([]byte(secretB), nil)
			if err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			expiry := time.Now().Add(time.Hour)
			// The writes go out on many connections at once.
			err = parallel(n, 32, func(i int) error {
				rec, err := a.SealRecord(pendingBinding(i), []byte(pendingContent(i)), expiry)
				if err != nil {
					return err
				}
				return s.Put(ctx, a.StoreKey(pendingBinding(i)), rec, expiry)
			})
			if err != nil {
				t.Fatalf("writing the records: %v", err)
			}
			t.Logf("%d records written under A in %v", n, time.Since(start).Round(time.Millisecond))

			// Resolvers take every third record, from both ends of the
			// key space, while the rewrap runs.
			var (
				resolved atomic.Int64
				wg       sync.WaitGroup
				taken    = make([]atomic.Int32, n)
			)
			start = time.Now()
			for w := range 4 {
				wg.Go(func() {
					// Worker w resolves the records i ≡ w (mod 4); the odd
					// ones from the end.
					for j := range (n - w + 3) / 4 {
						i := w + 4*j
						if w%2 == 1 {
							i = w + 4*((n-w+3)/4-1-j)
						}
						if i%3 != 0 {
							continue
						}
						rec, err := ba.Take(ctx, s, pendingBinding(i))
						if err != nil {
							t.Errorf("record %d: take: %v", i, err)
							continue
						}
						pt, err := ba.OpenRecord(pendingBinding(i), rec)
						if err != nil || string(pt) != pendingContent(i) {
							t.Errorf("record %d: open: %q, %v", i, pt, err)
							continue
						}
						taken[i].Add(1)
						resolved.Add(1)
					}
				})
			}
			p, err := ba.Rewrap(ctx, s, ring.RewrapOptions{})
			rewrapTime := time.Since(start)
			wg.Wait()
			if err != nil || p.Failed != 0 {
				t.Fatalf("rewrap: %+v, %v", p, err)
			}
			t.Logf("rewrap beside %d resolutions: %+v in %v", resolved.Load(), p, rewrapTime.Round(time.Millisecond))
			// Records that changed under the first pass are done by a second.
			p, err = ba.Rewrap(ctx, s, ring.RewrapOptions{})
			if err != nil || p.Failed != 0 || p.Rewrapped+p.Current != n-int(resolved.Load()) {
				t.Fatalf("second rewrap: %+v, %v; want %d records in all", p, err, n-int(resolved.Load()))
			}

			r, err := ring.Inspect(ctx, s, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Records[a.PrimaryKeyID()]; got != 0 {
				t.Fatalf("%d records left under A's key ID %s: %+v", got, a.PrimaryKeyID(), r.Records)
			}
			if got, want := r.Records[b.PrimaryKeyID()], n-int(resolved.Load()); got != want || r.Entries != want {
				t.Fatalf("%d records under B, %d entries; want %d", got, r.Entries, want)
			}

			// Every record resolved was resolved once and is gone; every
			// other one is there, and B alone opens it.
			err = parallel(n, 16, func(i int) error {
				if i%3 == 0 {
					if c := taken[i].Load(); c != 1 {
						return fmt.Errorf("resolved %d times", c)
					}
					if _, err := ba.Take(ctx, s, pendingBinding(i)); !errors.Is(err, store.ErrNotFound) {
						return fmt.Errorf("taken again: %v", err)
					}
					return nil
				}
				rec, err := b.Lookup(ctx, s, pendingBinding(i))
				if err != nil {
					return fmt.Errorf("lost: %w", err)
				}
				pt, err := b.OpenRecord(pendingBinding(i), rec)
				if err != nil || string(pt) != pendingContent(i) {
					return fmt.Errorf("B opens %q, %v", pt, err)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("record %v", err)
			}
		})
	}
}

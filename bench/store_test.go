package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// The store benchmarks measure each operation through a backend's store
// beside the raw driver commands the operation needs, on the same client
// (go-redis) or pool (pgx): same connections, same settings. Keys are 43
// characters, the length of elicitvault's blinded keys (base64url of an
// HMAC-SHA256); values and messages are 512 bytes.

// The environment the store benchmarks read. Without a server URL they
// skip; the ratio tests fail instead when ELICITVAULT_REQUIRE_BACKENDS=1.
const (
	redisURLEnv    = "ELICITVAULT_REDIS_URL"
	postgresURLEnv = "ELICITVAULT_POSTGRES_URL"
	requireEnv     = "ELICITVAULT_REQUIRE_BACKENDS"
)

const storeValueSize = 512

// backendURL returns the server URL in env, or skips tb; when require is
// set and ELICITVAULT_REQUIRE_BACKENDS=1, it fails tb instead.
func backendURL(tb testing.TB, env string, require bool) string {
	tb.Helper()
	u := os.Getenv(env)
	if u == "" {
		if require && os.Getenv(requireEnv) == "1" {
			tb.Fatalf("%s is not set, and %s=1", env, requireEnv)
		}
		tb.Skipf("%s is not set: set it to a server's URL to measure this backend", env)
	}
	return u
}

// storeKey returns a random 43-character key, shaped like the keys
// elicitvault writes.
func storeKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func storeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = storeKey()
	}
	return keys
}

// storeValues returns two distinct 512-byte values.
func storeValues() (v0, v1 []byte) {
	v0 = make([]byte, storeValueSize)
	v1 = make([]byte, storeValueSize)
	rand.Read(v0)
	rand.Read(v1)
	return v0, v1
}

// benchExpiry is the expiry of everything the benchmarks write: what a
// run leaves behind goes away on its own.
func benchExpiry() time.Time { return time.Now().Add(2 * time.Minute) }

// storeOp is one store operation, measured two ways.
type storeOp struct {
	name string
	// setup, when set, prepares n iterations (writes the keys Take will
	// take, say), with the timer stopped.
	setup func(tb testing.TB, n int)
	// viaStore and raw run iteration i, through the store and with the raw
	// driver commands.
	viaStore, raw func(ctx context.Context, i int) error
}

// run returns the benchmark of one side of op.
func (op storeOp) run(f func(ctx context.Context, i int) error) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		if op.setup != nil {
			b.StopTimer()
			op.setup(b, b.N)
			b.StartTimer()
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := f(ctx, i); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchOps runs every operation's store and raw sub-benchmarks.
func benchOps(b *testing.B, ops []storeOp) {
	for _, op := range ops {
		b.Run(op.name+"/store", op.run(op.viaStore))
		b.Run(op.name+"/raw", op.run(op.raw))
	}
}

// benchBackend runs benchOps on the operations ops returns for the backend
// at the URL in urlEnv, then RoundTrip: benchRoundTrips between two stores
// that open returns on one namespace of their own (a key prefix, a
// schema).
func benchBackend(b *testing.B, urlEnv string, ops func(testing.TB, string) []storeOp, namespace func(testing.TB, string) string, open func(tb testing.TB, url, namespace string) store.Store) {
	url := backendURL(b, urlEnv, false)
	benchOps(b, ops(b, url))
	b.Run("RoundTrip", func(b *testing.B) {
		ns := namespace(b, url)
		waiter := open(b, url, ns)
		resolver := open(b, url, ns)
		benchRoundTrips(b, waiter, resolver)
	})
}

// benchRoundTrips measures full round trips between two stores, as two
// nodes make them: the waiter subscribes to the elicitation's channel and
// writes the pending record; the resolver, on the other store, reads the
// pending record, writes the result and publishes; the waiter wakes on the
// message, reads the result (taking it) and cleans up. Many round trips run
// at once; their throughput is reported as round-trips/s.
func benchRoundTrips(b *testing.B, waiter, resolver store.Store) {
	ctx := context.Background()
	value, _ := storeValues()
	type job struct {
		pending, result, channel string
		done                     chan error
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for j := range jobs {
				j.done <- func() error {
					if _, err := resolver.Get(ctx, j.pending); err != nil {
						return err
					}
					if err := resolver.Put(ctx, j.result, value, benchExpiry()); err != nil {
						return err
					}
					return resolver.Publish(ctx, j.channel, []byte{1})
				}()
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()

	b.SetParallelism(4) // 4 × GOMAXPROCS elicitations in flight
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		done := make(chan error, 1)
		for pb.Next() {
			j := job{pending: storeKey(), result: storeKey(), channel: "ev:" + storeKey(), done: done}
			sub, err := waiter.Subscribe(ctx, j.channel)
			if err != nil {
				b.Error(err)
				return
			}
			if err := waiter.Put(ctx, j.pending, value, benchExpiry()); err != nil {
				b.Error(err)
				return
			}
			jobs <- j
			for woken := false; !woken; {
				if _, ok := <-sub.Messages(); !ok {
					b.Errorf("subscription ended: %v", sub.Err())
					return
				}
				// A message or a resubscription: read the store again.
				switch _, err := waiter.Take(ctx, j.result); {
				case err == nil:
					woken = true
				case errors.Is(err, store.ErrNotFound):
				default:
					b.Error(err)
					return
				}
			}
			sub.Close()
			if err := waiter.Delete(ctx, j.pending); err != nil {
				b.Error(err)
				return
			}
			if err := <-done; err != nil {
				b.Errorf("resolver: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "round-trips/s")
}

// rawStore is a backend's raw commands for the operations storeOps
// measures, on keys of type K: the store key as the backend's driver
// names it (the Redis key with prefix and hash tag, the bytea of
// PostgreSQL), computed before the timer runs.
type rawStore[K any] struct {
	key         func(string) K
	put         func(ctx context.Context, key K, value []byte, expiry time.Time) error
	get         func(ctx context.Context, key K) error
	putMany     func(tb testing.TB, keys []K, value []byte, expiry time.Time)
	take        func(ctx context.Context, key K) error
	putIfAbsent func(ctx context.Context, key K, value []byte, expiry time.Time) (bool, error)
	// putIfAbsentGet writes key if absent, then reads other, in one round
	// trip.
	putIfAbsentGet func(ctx context.Context, key, other K, value []byte, expiry time.Time) (bool, error)
	swap           func(ctx context.Context, key K, value []byte, expiry time.Time) error
	cas            func(ctx context.Context, key K, old, value []byte, expiry time.Time) (bool, error)
	// publish publishes value on the store channel it was made for.
	publish func(ctx context.Context, value []byte) error
}

// storeOps returns the operations of s, whose messages go to channel,
// beside the raw commands of r, on the same keys.
func storeOps[K any](s store.Store, channel string, r rawStore[K]) []storeOp {
	v0, v1 := storeValues()
	expiry := benchExpiry()
	key := storeKey()
	rkey := r.key(key)
	// fresh holds the keys of one run: each iteration of Take and
	// PutIfAbsent has a key of its own.
	var fresh []string
	var rfresh []K
	newKeys := func(tb testing.TB, n int) {
		fresh = storeKeys(n)
		rfresh = make([]K, n)
		for i, k := range fresh {
			rfresh[i] = r.key(k)
		}
	}
	mustPut := func(tb testing.TB, n int) {
		if err := r.put(context.Background(), rkey, v0, expiry); err != nil {
			tb.Fatal(err)
		}
	}
	alternate := func(i int) (old, value []byte) {
		if i%2 == 0 {
			return v0, v1
		}
		return v1, v0
	}
	written := func(what string, ok bool, err error) error {
		if err == nil && !ok {
			err = errors.New(what)
		}
		return err
	}
	return []storeOp{
		{
			name:     "Put",
			viaStore: func(ctx context.Context, i int) error { return s.Put(ctx, key, v0, expiry) },
			raw:      func(ctx context.Context, i int) error { return r.put(ctx, rkey, v0, expiry) },
		},
		{
			name:  "Get",
			setup: mustPut,
			viaStore: func(ctx context.Context, i int) error {
				_, err := s.Get(ctx, key)
				return err
			},
			raw: func(ctx context.Context, i int) error { return r.get(ctx, rkey) },
		},
		{
			name: "Take",
			setup: func(tb testing.TB, n int) {
				newKeys(tb, n)
				r.putMany(tb, rfresh, v0, expiry)
			},
			viaStore: func(ctx context.Context, i int) error {
				_, err := s.Take(ctx, fresh[i])
				return err
			},
			raw: func(ctx context.Context, i int) error { return r.take(ctx, rfresh[i]) },
		},
		{
			name:  "PutIfAbsent",
			setup: newKeys,
			viaStore: func(ctx context.Context, i int) error {
				ok, err := s.PutIfAbsent(ctx, fresh[i], v0, expiry)
				return written("not written", ok, err)
			},
			raw: func(ctx context.Context, i int) error {
				ok, err := r.putIfAbsent(ctx, rfresh[i], v0, expiry)
				return written("not written", ok, err)
			},
		},
		{
			// The one-shot claim of a token, with the store's epoch: the
			// key read is a live one.
			name: "PutIfAbsentGet",
			setup: func(tb testing.TB, n int) {
				newKeys(tb, n)
				mustPut(tb, n)
			},
			viaStore: func(ctx context.Context, i int) error {
				ok, _, err := s.(interface {
					PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error)
				}).PutIfAbsentGet(ctx, fresh[i], v0, expiry, key)
				return written("not written", ok, err)
			},
			raw: func(ctx context.Context, i int) error {
				ok, err := r.putIfAbsentGet(ctx, rfresh[i], rkey, v0, expiry)
				return written("not written", ok, err)
			},
		},
		{
			name: "Swap",
			viaStore: func(ctx context.Context, i int) error {
				_, value := alternate(i)
				_, err := s.Swap(ctx, key, value, expiry)
				return err
			},
			raw: func(ctx context.Context, i int) error {
				_, value := alternate(i)
				return r.swap(ctx, rkey, value, expiry)
			},
		},
		{
			name:  "CompareAndSwap",
			setup: mustPut,
			viaStore: func(ctx context.Context, i int) error {
				old, value := alternate(i)
				ok, err := s.CompareAndSwap(ctx, key, old, value, expiry)
				return written("no swap", ok, err)
			},
			raw: func(ctx context.Context, i int) error {
				old, value := alternate(i)
				ok, err := r.cas(ctx, rkey, old, value, expiry)
				return written("no swap", ok, err)
			},
		},
		{
			name:     "Publish",
			viaStore: func(ctx context.Context, i int) error { return s.Publish(ctx, channel, v0) },
			raw:      func(ctx context.Context, i int) error { return r.publish(ctx, v0) },
		},
	}
}

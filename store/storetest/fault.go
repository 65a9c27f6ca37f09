package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// The helpers below are for a backend's fault tests: a server stopped,
// restarted or cut off under load.

// waiter waits for the value under a key the way the elicit flow does:
// subscribed to its channel before anything else happens, it reads the
// store again after every message and after every resubscription.
type waiter struct {
	sub          store.Subscription
	resubscribed atomic.Int32
	result       chan []byte
}

// startWaiter subscribes to channel on s and starts waiting for key. It
// fails t if it cannot subscribe; Close ends it.
func startWaiter(t testing.TB, ctx context.Context, s store.Store, channel, key string) *waiter {
	t.Helper()
	sub, err := s.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	w := &waiter{sub: sub, result: make(chan []byte, 1)}
	go func() {
		for m := range sub.Messages() {
			if m.Resubscribed {
				w.resubscribed.Add(1)
			}
			if v, err := s.Get(ctx, key); err == nil {
				w.result <- v
				return
			}
		}
	}()
	return w
}

// Resubscriptions returns how many Resubscribed messages the waiter got.
func (w *waiter) resubscriptions() int32 { return w.resubscribed.Load() }

// awaitResubscribed reports whether the waiter got more than before
// resubscriptions by deadline.
func (w *waiter) awaitResubscribed(before int32, deadline time.Time) bool {
	for w.resubscribed.Load() == before {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Result returns what the waiter read under its key, failing t when it
// read nothing within timeout.
func (w *waiter) Result(t testing.TB, timeout time.Duration) []byte {
	t.Helper()
	select {
	case v := <-w.result:
		return v
	case <-time.After(timeout):
		t.Fatal("the waiter did not get the result")
		return nil
	}
}

// Close ends the waiter's subscription.
func (w *waiter) Close() { w.sub.Close() }

// burst runs every operation of the contract, in turn, in workers spread
// over some stores, until Stop.
type burst struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	failures atomic.Int64
	lastOK   []atomic.Int64 // per worker, Unix ns of its last success
}

// startBurst starts workers workers, worker i on stores[i%len(stores)] and
// a key of its own. Every failed operation is counted and passed to check,
// which judges whether it failed cleanly; after a failure the worker
// pauses briefly, so that a server that is down is not spun against.
func startBurst(ctx context.Context, workers int, stores []store.Store, check func(worker int, err error)) *burst {
	b := &burst{stop: make(chan struct{}), lastOK: make([]atomic.Int64, workers)}
	for w := range workers {
		s := stores[w%len(stores)]
		b.wg.Go(func() {
			key := fmt.Sprintf("burst-%d", w)
			for i := 0; ; i++ {
				select {
				case <-b.stop:
					return
				default:
				}
				octx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := burstOp(octx, s, key, i)
				cancel()
				if err != nil {
					b.failures.Add(1)
					check(w, err)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				b.lastOK[w].Store(time.Now().UnixNano())
			}
		})
	}
	return b
}

// awaitRecovered waits until every worker has succeeded after since. It
// returns -1 when they all have, or the first worker that had not by
// deadline.
func (b *burst) awaitRecovered(since, deadline time.Time) int {
	for w := range b.lastOK {
		for b.lastOK[w].Load() < since.UnixNano() {
			if time.Now().After(deadline) {
				return w
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return -1
}

// Stop stops the workers, waits for them and returns how many operations
// failed.
func (b *burst) Stop() int64 {
	close(b.stop)
	b.wg.Wait()
	return b.failures.Load()
}

// burstOp runs the i-th operation of a burst worker on key: each operation
// of the contract in turn. Not found is not a failure.
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

// awaitRecovery fails t unless, by deadline, w's subscription was
// resubscribed since its count was before and every worker of b has
// recovered since at.
func awaitRecovery(t *testing.T, round int, w *waiter, b *burst, before int32, at, deadline time.Time) {
	t.Helper()
	if !w.awaitResubscribed(before, deadline) {
		t.Fatalf("round %d: the waiter's subscription was not resubscribed", round)
	}
	if i := b.awaitRecovered(at, deadline); i >= 0 {
		t.Fatalf("round %d: burst worker %d did not recover", round, i)
	}
}

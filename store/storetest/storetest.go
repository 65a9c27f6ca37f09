// Package storetest is the conformance suite for store.Store backends.
//
// A backend's tests call Run with a function that opens a fresh store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memory.New(nil) })
//	}
//
// The suite uses real time and generous timeouts, so that it also runs
// against servers reached over TCP. It writes keys shaped like the ones
// elicitvault writes (the unpadded base64url encoding of 32 random bytes),
// and ignores entries it did not write.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// waitTimeout bounds every wait for a message or a closed channel.
const waitTimeout = 5 * time.Second

// Run runs the conformance suite against the stores newStore returns.
//
// Every subtest calls newStore once and expects a fresh, empty store that
// no other test uses. Run closes each store when its subtest ends, and
// accepts a store that the subtest closed already. Subtests do not run in
// parallel, because one of them counts goroutines.
//
// Where the contract leaves room, the suite expects this: Scan returns at
// most count entries; CompareAndSwap with a nil value ignores its expiry,
// even a zero one; Err returns nil after Subscription.Close; a second
// Close of the store returns nil or ErrClosed; a subscriber may receive a
// message with Resubscribed set at any time.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	open := func(t *testing.T) store.Store {
		t.Helper()
		s := newStore(t)
		if s == nil {
			t.Fatal("newStore returned nil")
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"PutGet", testPutGet},
		{"GetMissing", testGetMissing},
		{"Expiry", testExpiry},
		{"Take", testTake},
		{"TakeConcurrent", testTakeConcurrent},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentConcurrent", testPutIfAbsentConcurrent},
		{"PutIfAbsentGet", testPutIfAbsentGet},
		{"PutIfAbsentGetConcurrent", testPutIfAbsentGetConcurrent},
		{"PutIfAbsentGetInvalid", testPutIfAbsentGetInvalid},
		{"Swap", testSwap},
		{"SwapConcurrent", testSwapConcurrent},
		{"CompareAndSwap", testCompareAndSwap},
		{"CompareAndSwapConcurrent", testCompareAndSwapConcurrent},
		{"Delete", testDelete},
		{"Scan", testScan},
		{"PublishSubscribe", testPublishSubscribe},
		{"SubscriptionClose", testSubscriptionClose},
		{"CloseEndsSubscriptions", testCloseEndsSubscriptions},
		{"Closed", testClosed},
		{"InvalidArgument", testInvalidArgument},
		{"ContextCanceled", testContextCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
	t.Run("NoLeaks", func(t *testing.T) {
		// Registered before open's cleanup, so it runs after the store is
		// closed.
		checkNoLeaks(t)
		testNoLeaks(t, open(t))
	})
}

// checkNoLeaks records the number of goroutines now and, when t's test
// ends, fails it unless that number comes back within five seconds.
//
// Cleanups run last registered first, so call checkNoLeaks before creating
// what must be released, including before registering cleanups that close
// it. It counts every goroutine of the process: do not use it in parallel
// tests.
func checkNoLeaks(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitTimeout)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// newKey returns a random key shaped like the keys elicitvault writes.
func newKey() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// value returns a distinct, recognizable value.
func value(format string, args ...any) []byte {
	return fmt.Appendf(nil, format, args...)
}

func mustPut(t *testing.T, s store.Store, key string, value []byte, expiry time.Time) {
	t.Helper()
	if err := s.Put(t.Context(), key, value, expiry); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

// wantValue fails t unless key holds want.
func wantValue(t *testing.T, s store.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if err != nil {
		t.Errorf("Get: %v, want %q", err, want)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Get = %q, want %q", got, want)
	}
}

// wantMissing fails t unless key is absent.
func wantMissing(t *testing.T, s store.Store, key string) {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get = %q, %v; want ErrNotFound", got, err)
	}
}

// waitExpired polls s until it reports key absent, and fails t if key
// is still there when read 150ms or more after expiry. The store's server
// keeps its own clock, so the test cannot move it: it waits for the event,
// and a read that is late only because the machine is loaded does not fail.
func waitExpired(t *testing.T, s store.Store, key string, expiry time.Time) {
	t.Helper()
	for {
		asked := time.Now()
		got, err := s.Get(t.Context(), key)
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if late := asked.Sub(expiry); late >= 150*time.Millisecond {
			t.Fatalf("Get %v after the entry's expiry = %q, want ErrNotFound", late.Round(time.Millisecond), got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// putExpiring puts value under key to expire 250ms from now and returns
// that expiry. If the store refused it because the expiry had passed by
// the time the write arrived (a loaded machine), it writes it again to
// expire a second from then.
func putExpiring(t *testing.T, s store.Store, key string, value []byte) time.Time {
	t.Helper()
	expiry := time.Now().Add(250 * time.Millisecond)
	err := s.Put(t.Context(), key, value, expiry)
	if err != nil && time.Now().After(expiry) {
		expiry = time.Now().Add(time.Second)
		err = s.Put(t.Context(), key, value, expiry)
	}
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return expiry
}

// concurrently runs fn(i) for i in [0, n) in n goroutines released at
// once, and waits for them.
func concurrently(n int, fn func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			fn(i)
		})
	}
	start.Done()
	done.Wait()
}

// race runs fn on n goroutines at once, as concurrently does, and counts
// the callers for which it reports a win: it returns how many won, and one
// of them (-1 if none did).
func race(n int, fn func(i int) bool) (winner, winners int) {
	var mu sync.Mutex
	winner = -1
	concurrently(n, func(i int) {
		if fn(i) {
			mu.Lock()
			winners++
			winner = i
			mu.Unlock()
		}
	})
	return winner, winners
}

func testPutGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	expiry := time.Now().Add(time.Minute)

	buf := value("first value")
	mustPut(t, s, key, buf, expiry)
	copy(buf, "XXXXX")
	wantValue(t, s, key, value("first value"))

	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	copy(got, "YYYYY")
	wantValue(t, s, key, value("first value"))

	mustPut(t, s, key, value("second value"), expiry)
	wantValue(t, s, key, value("second value"))

	// Binary values, and the empty value, round trip.
	bin := make([]byte, 512)
	for i := range bin {
		bin[i] = byte(i)
	}
	other := newKey()
	mustPut(t, s, other, bin, expiry)
	wantValue(t, s, other, bin)
	mustPut(t, s, other, []byte{}, expiry)
	wantValue(t, s, other, []byte{})

	// Writing one key does not touch another.
	wantValue(t, s, key, value("second value"))
}

func testGetMissing(t *testing.T, s store.Store) {
	wantMissing(t, s, newKey())
	got, err := s.Take(t.Context(), newKey())
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Take of a missing key = %q, %v; want ErrNotFound", got, err)
	}
}

// testExpiry writes entries that expire soon, waits until the store
// reports the first one written absent (failing if it still holds it 150ms
// after its expiry), and checks that every operation treats them all as
// absent, and that every write applies the expiry it is given.
//
// The entries live 250ms; when writing them takes longer on a loaded
// machine, the test writes new ones that live four times longer.
func testExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	v, v2 := value("v"), value("v2")
	long := time.Now().Add(time.Minute)
	var (
		short                                  time.Time
		get, take, swap, pia, cas, casDel      string
		piaShort, swapShort, casShort, renewed string
	)
	for ttl := 250 * time.Millisecond; ; ttl *= 4 {
		start := time.Now()
		short = start.Add(ttl)
		get, take, swap, pia, cas, casDel = newKey(), newKey(), newKey(), newKey(), newKey(), newKey()
		piaShort, swapShort, casShort, renewed = newKey(), newKey(), newKey(), newKey()
		err := func() error {
			if err := s.Put(ctx, get, v, short); err != nil {
				return err
			}
			if got, err := s.Get(ctx, get); err != nil || !bytes.Equal(got, v) {
				return fmt.Errorf("after Put, Get = %q, %v; want %q", got, err, v)
			}
			for _, k := range []string{take, swap, pia, cas, casDel} {
				if err := s.Put(ctx, k, v, short); err != nil {
					return err
				}
			}
			// Every write sets the expiry it is given, replacing the
			// previous one.
			if ok, err := s.PutIfAbsent(ctx, piaShort, v, short); !ok || err != nil {
				return fmt.Errorf("a first PutIfAbsent = %v, %v; want true", ok, err)
			}
			if err := s.Put(ctx, swapShort, v, long); err != nil {
				return err
			}
			if _, err := s.Swap(ctx, swapShort, v2, short); err != nil {
				return fmt.Errorf("swap: %w", err)
			}
			if err := s.Put(ctx, casShort, v, long); err != nil {
				return err
			}
			if ok, err := s.CompareAndSwap(ctx, casShort, v, v2, short); !ok || err != nil {
				return fmt.Errorf("CompareAndSwap = %v, %v; want true", ok, err)
			}
			if err := s.Put(ctx, renewed, v, short); err != nil {
				return err
			}
			return s.Put(ctx, renewed, v2, long)
		}()
		if err == nil && time.Now().Before(short) {
			break
		}
		if ttl >= 4*time.Second {
			if err == nil {
				err = errors.New("the writes outlived the entries")
			}
			t.Fatalf("writing entries that live %v: %v (took %v)", ttl, err, time.Since(start))
		}
		t.Logf("writing entries that live %v took %v (%v): again with a longer life", ttl, time.Since(start), err)
	}
	waitExpired(t, s, get, short)

	wantMissing(t, s, get)
	if got, err := s.Take(ctx, take); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Take of an expired entry = %q, %v; want ErrNotFound", got, err)
	}
	if old, err := s.Swap(ctx, swap, v2, long); old != nil || err != nil {
		t.Errorf("Swap of an expired entry = %q, %v; want nil, nil", old, err)
	}
	wantValue(t, s, swap, v2)
	if ok, err := s.PutIfAbsent(ctx, pia, v2, long); !ok || err != nil {
		t.Errorf("PutIfAbsent over an expired entry = %v, %v; want true", ok, err)
	}
	wantValue(t, s, pia, v2)
	if ok, err := s.CompareAndSwap(ctx, cas, v, v2, long); ok || err != nil {
		t.Errorf("CompareAndSwap of an expired entry = %v, %v; want false", ok, err)
	}
	wantMissing(t, s, cas)
	if ok, err := s.CompareAndSwap(ctx, casDel, v, nil, time.Time{}); ok || err != nil {
		t.Errorf("CompareAndSwap (delete) of an expired entry = %v, %v; want false", ok, err)
	}
	wantMissing(t, s, casDel)

	wantMissing(t, s, piaShort)
	wantMissing(t, s, swapShort)
	wantMissing(t, s, casShort)
	wantValue(t, s, renewed, v2)
}

func testTake(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	mustPut(t, s, key, value("taken"), time.Now().Add(time.Minute))
	got, err := s.Take(ctx, key)
	if err != nil || !bytes.Equal(got, value("taken")) {
		t.Fatalf("Take = %q, %v; want %q", got, err, "taken")
	}
	if got, err := s.Take(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Take = %q, %v; want ErrNotFound", got, err)
	}
	wantMissing(t, s, key)
}

func testTakeConcurrent(t *testing.T, s store.Store) {
	const takers = 100
	for round := range 3 {
		key := newKey()
		want := value("value of round %d", round)
		mustPut(t, s, key, want, time.Now().Add(time.Minute))
		_, winners := race(takers, func(int) bool {
			got, err := s.Take(t.Context(), key)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				t.Errorf("Take: %v", err)
			case !bytes.Equal(got, want):
				t.Errorf("Take = %q, want %q", got, want)
			default:
				return true
			}
			return false
		})
		if winners != 1 {
			t.Errorf("round %d: %d of %d concurrent takers got the value, want 1", round, winners, takers)
		}
		wantMissing(t, s, key)
	}
}

func testPutIfAbsent(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	expiry := time.Now().Add(time.Minute)
	buf := value("first")
	if ok, err := s.PutIfAbsent(ctx, key, buf, expiry); !ok || err != nil {
		t.Fatalf("PutIfAbsent = %v, %v; want true", ok, err)
	}
	copy(buf, "XXXXX")
	if ok, err := s.PutIfAbsent(ctx, key, value("second"), expiry); ok || err != nil {
		t.Errorf("PutIfAbsent over a live entry = %v, %v; want false", ok, err)
	}
	wantValue(t, s, key, value("first"))
}

func testPutIfAbsentConcurrent(t *testing.T, s store.Store) {
	const callers = 100
	for round := range 3 {
		key := newKey()
		expiry := time.Now().Add(time.Minute)
		winner, winners := race(callers, func(i int) bool {
			ok, err := s.PutIfAbsent(t.Context(), key, value("caller %d", i), expiry)
			if err != nil {
				t.Errorf("PutIfAbsent: %v", err)
			}
			return ok
		})
		if winners != 1 {
			t.Fatalf("round %d: %d of %d concurrent callers wrote, want 1", round, winners, callers)
		}
		wantValue(t, s, key, value("caller %d", winner))
	}
}

func testSwap(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	expiry := time.Now().Add(time.Minute)
	buf := value("first")
	old, err := s.Swap(ctx, key, buf, expiry)
	if old != nil || err != nil {
		t.Fatalf("Swap of a missing key = %q, %v; want nil, nil", old, err)
	}
	copy(buf, "XXXXX")
	wantValue(t, s, key, value("first"))
	old, err = s.Swap(ctx, key, value("second"), expiry)
	if err != nil || !bytes.Equal(old, value("first")) {
		t.Fatalf("Swap = %q, %v; want %q", old, err, "first")
	}
	wantValue(t, s, key, value("second"))
}

// testSwapConcurrent checks that concurrent swaps form one chain: each
// value written is returned by exactly one later swap or left in the store,
// and exactly one swap finds the key empty.
func testSwapConcurrent(t *testing.T, s store.Store) {
	const swappers = 50
	key := newKey()
	expiry := time.Now().Add(time.Minute)
	var mu sync.Mutex
	seen := make(map[string]int)
	empty := 0
	concurrently(swappers, func(i int) {
		old, err := s.Swap(t.Context(), key, value("swapper %d", i), expiry)
		if err != nil {
			t.Errorf("Swap: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if old == nil {
			empty++
		} else {
			seen[string(old)]++
		}
	})
	last, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	seen[string(last)]++
	if empty != 1 {
		t.Errorf("%d swaps found the key empty, want 1", empty)
	}
	for i := range swappers {
		if n := seen[string(value("swapper %d", i))]; n != 1 {
			t.Errorf("value of swapper %d seen %d times, want once", i, n)
		}
	}
}

func testCompareAndSwap(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	expiry := time.Now().Add(time.Minute)
	v1, v2, v3 := value("one"), value("two"), value("three")

	if ok, err := s.CompareAndSwap(ctx, key, v1, v2, expiry); ok || err != nil {
		t.Errorf("CompareAndSwap of a missing key = %v, %v; want false", ok, err)
	}
	wantMissing(t, s, key)

	mustPut(t, s, key, v1, expiry)
	if ok, err := s.CompareAndSwap(ctx, key, v2, v3, expiry); ok || err != nil {
		t.Errorf("CompareAndSwap with a mismatch = %v, %v; want false", ok, err)
	}
	wantValue(t, s, key, v1)
	// A prefix of the value is not a match.
	if ok, err := s.CompareAndSwap(ctx, key, v1[:2], v3, expiry); ok || err != nil {
		t.Errorf("CompareAndSwap with a prefix = %v, %v; want false", ok, err)
	}
	wantValue(t, s, key, v1)

	buf := bytes.Clone(v3)
	if ok, err := s.CompareAndSwap(ctx, key, v1, buf, expiry); !ok || err != nil {
		t.Fatalf("CompareAndSwap with a match = %v, %v; want true", ok, err)
	}
	copy(buf, "XXXXX")
	wantValue(t, s, key, v3)

	// A nil value deletes; the expiry is then ignored.
	if ok, err := s.CompareAndSwap(ctx, key, v1, nil, time.Time{}); ok || err != nil {
		t.Errorf("CompareAndSwap (delete) with a mismatch = %v, %v; want false", ok, err)
	}
	wantValue(t, s, key, v3)
	if ok, err := s.CompareAndSwap(ctx, key, v3, nil, time.Time{}); !ok || err != nil {
		t.Fatalf("CompareAndSwap (delete) with a match = %v, %v; want true", ok, err)
	}
	wantMissing(t, s, key)
	if ok, err := s.CompareAndSwap(ctx, key, v3, nil, time.Time{}); ok || err != nil {
		t.Errorf("CompareAndSwap (delete) of a missing key = %v, %v; want false", ok, err)
	}
}

func testCompareAndSwapConcurrent(t *testing.T, s store.Store) {
	const callers = 100
	key := newKey()
	expiry := time.Now().Add(time.Minute)
	mustPut(t, s, key, value("initial"), expiry)
	winner, winners := race(callers, func(i int) bool {
		ok, err := s.CompareAndSwap(t.Context(), key, value("initial"), value("caller %d", i), expiry)
		if err != nil {
			t.Errorf("CompareAndSwap: %v", err)
		}
		return ok
	})
	if winners != 1 {
		t.Fatalf("%d of %d concurrent callers swapped, want 1", winners, callers)
	}
	wantValue(t, s, key, value("caller %d", winner))
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	key, other := newKey(), newKey()
	expiry := time.Now().Add(time.Minute)
	mustPut(t, s, key, value("deleted"), expiry)
	mustPut(t, s, other, value("kept"), expiry)
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantMissing(t, s, key)
	wantValue(t, s, other, value("kept"))
	if err := s.Delete(ctx, key); err != nil {
		t.Errorf("Delete of a deleted key: %v", err)
	}
	if err := s.Delete(ctx, newKey()); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
}

// testScan scans in small batches while writing and deleting other
// entries, and checks that every entry present for the whole scan is
// returned with its value and expiry, and that no expired or deleted entry
// is.
func testScan(t *testing.T, s store.Store) {
	const (
		entries = 250
		count   = 7
	)
	ctx := t.Context()
	start := time.Now()

	// Entries that expire before the scan, each 250ms after it is written
	// (or a second, when the machine is too loaded to write one in 250ms:
	// a store refuses an expiry already past).
	expired := make(map[string]bool)
	var last string // the entry that expires last
	var short time.Time
	for range 5 {
		k := newKey()
		if expiry := putExpiring(t, s, k, value("expired")); expiry.After(short) {
			last, short = k, expiry
		}
		expired[k] = true
	}
	type want struct {
		value  []byte
		expiry time.Time
	}
	stable := make(map[string]want)
	for i := range entries {
		k := newKey()
		w := want{value("entry %d", i), start.Add(time.Minute + time.Duration(i)*time.Second)}
		mustPut(t, s, k, w.value, w.expiry)
		stable[k] = w
	}
	// Entries deleted during the scan, one per batch.
	var churn []string
	deleted := make(map[string]bool)
	for range entries/count + 2 {
		k := newKey()
		mustPut(t, s, k, value("deleted during the scan"), start.Add(time.Minute))
		churn = append(churn, k)
	}

	waitExpired(t, s, last, short)

	seen := make(map[string]bool)
	cursor := ""
	for batch := 0; ; batch++ {
		if batch > 10*entries {
			t.Fatalf("scan did not end after %d batches", batch)
		}
		got, next, err := s.Scan(ctx, cursor, count)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if len(got) > count {
			t.Errorf("Scan returned %d entries, want at most %d", len(got), count)
		}
		for _, e := range got {
			if expired[e.Key] {
				t.Errorf("Scan returned an expired entry")
			}
			if deleted[e.Key] {
				t.Errorf("Scan returned an entry deleted before the batch")
			}
			w, ok := stable[e.Key]
			if !ok {
				continue
			}
			seen[e.Key] = true
			if !bytes.Equal(e.Value, w.value) {
				t.Errorf("Scan value = %q, want %q", e.Value, w.value)
			}
			if d := e.Expiry.Sub(w.expiry).Abs(); d > time.Second {
				t.Errorf("Scan expiry = %v, want %v", e.Expiry, w.expiry)
			}
		}
		if next == "" {
			break
		}
		cursor = next
		// Writes between batches must not hide stable entries.
		mustPut(t, s, newKey(), value("written during the scan"), time.Now().Add(time.Minute))
		if len(churn) > 0 {
			k := churn[0]
			churn = churn[1:]
			if err := s.Delete(ctx, k); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			deleted[k] = true
		}
	}
	if len(seen) != len(stable) {
		t.Errorf("Scan returned %d of the %d entries present for the whole scan", len(seen), len(stable))
	}
}

// recv returns the next data message of sub, skipping notices that it was
// resubscribed, or fails t after waitTimeout.
func recv(t *testing.T, sub store.Subscription) []byte {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				t.Fatalf("Messages closed while waiting for a message (Err: %v)", sub.Err())
			}
			if m.Resubscribed {
				continue
			}
			return m.Data
		case <-timer.C:
			t.Fatalf("no message after %v", waitTimeout)
		}
	}
}

// waitClosed fails t unless the channel of sub is closed within
// waitTimeout. Messages still buffered are discarded.
func waitClosed(t *testing.T, sub store.Subscription) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-sub.Messages():
			if !ok {
				return
			}
		case <-timer.C:
			t.Errorf("Messages not closed after %v", waitTimeout)
			return
		}
	}
}

func mustSubscribe(t *testing.T, s store.Store, channel string) store.Subscription {
	t.Helper()
	sub, err := s.Subscribe(t.Context(), channel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() {
		if err := sub.Close(); err != nil {
			t.Errorf("Subscription.Close: %v", err)
		}
	})
	return sub
}

func testPublishSubscribe(t *testing.T, s store.Store) {
	ctx := t.Context()
	ch1, ch2 := newKey(), newKey()
	a := mustSubscribe(t, s, ch1)
	b := mustSubscribe(t, s, ch1)
	c := mustSubscribe(t, s, ch2)

	msg := make([]byte, 256)
	for i := range msg {
		msg[i] = byte(i)
	}
	want := bytes.Clone(msg)
	if err := s.Publish(ctx, ch1, msg); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	copy(msg, "XXXXX")
	for _, sub := range []store.Subscription{a, b} {
		if got := recv(t, sub); !bytes.Equal(got, want) {
			t.Errorf("received %q, want %q", got, want)
		}
	}

	// The subscriber of ch2 receives only what is published on ch2, after
	// what was published on ch1: its first message must be this one.
	if err := s.Publish(ctx, ch2, value("on ch2")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got := recv(t, c); !bytes.Equal(got, value("on ch2")) {
		t.Errorf("subscriber of another channel received %q", got)
	}

	// Publishing on a channel nobody subscribes to is not an error.
	if err := s.Publish(ctx, newKey(), value("unheard")); err != nil {
		t.Errorf("Publish without subscribers: %v", err)
	}
}

func testSubscriptionClose(t *testing.T, s store.Store) {
	ctx := t.Context()
	channel := newKey()
	sub, err := s.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	other := mustSubscribe(t, s, channel)
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitClosed(t, sub)
	if err := sub.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := sub.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
	// The other subscription of the channel still works.
	if err := s.Publish(ctx, channel, value("after close")); err != nil {
		t.Fatalf("Publish after a subscription closed: %v", err)
	}
	if got := recv(t, other); !bytes.Equal(got, value("after close")) {
		t.Errorf("received %q, want %q", got, "after close")
	}
}

func testCloseEndsSubscriptions(t *testing.T, s store.Store) {
	ch1, ch2 := newKey(), newKey()
	subs := []store.Subscription{
		mustSubscribe(t, s, ch1),
		mustSubscribe(t, s, ch1),
		mustSubscribe(t, s, ch2),
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, sub := range subs {
		waitClosed(t, sub)
	}
}

// wantErr fails t unless err matches target.
func wantErr(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: %v, want %v", op, err, target)
	}
}

// callAll calls every method of s but Close with valid arguments, and
// checks that each returns an error matching target.
func callAll(t *testing.T, ctx context.Context, s store.Store, target error) {
	t.Helper()
	key, v := newKey(), value("v")
	expiry := time.Now().Add(time.Minute)

	wantErr(t, "Put", s.Put(ctx, key, v, expiry), target)
	_, err := s.Get(ctx, key)
	wantErr(t, "Get", err, target)
	_, err = s.Take(ctx, key)
	wantErr(t, "Take", err, target)
	_, err = s.PutIfAbsent(ctx, key, v, expiry)
	wantErr(t, "PutIfAbsent", err, target)
	_, err = s.Swap(ctx, key, v, expiry)
	wantErr(t, "Swap", err, target)
	_, err = s.CompareAndSwap(ctx, key, v, value("v2"), expiry)
	wantErr(t, "CompareAndSwap", err, target)
	_, err = s.CompareAndSwap(ctx, key, v, nil, time.Time{})
	wantErr(t, "CompareAndSwap (delete)", err, target)
	wantErr(t, "Delete", s.Delete(ctx, key), target)
	_, _, err = s.Scan(ctx, "", 10)
	wantErr(t, "Scan", err, target)
	wantErr(t, "Publish", s.Publish(ctx, newKey(), v), target)
	sub, err := s.Subscribe(ctx, newKey())
	wantErr(t, "Subscribe", err, target)
	if sub != nil {
		sub.Close()
	}
}

func testClosed(t *testing.T, s store.Store) {
	mustPut(t, s, newKey(), value("v"), time.Now().Add(time.Minute))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	callAll(t, t.Context(), s, store.ErrClosed)
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v, want nil or ErrClosed", err)
	}
}

func testContextCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	callAll(t, ctx, s, context.Canceled)
}

func testInvalidArgument(t *testing.T, s store.Store) {
	ctx := t.Context()
	v := value("v")
	now := time.Now()
	future := now.Add(time.Minute)
	past := now.Add(-time.Second)

	// Writes with an invalid value or expiry write nothing: not to a
	// missing key, and not over an existing entry.
	missing, existing := newKey(), newKey()
	mustPut(t, s, existing, v, future)
	for _, key := range []string{missing, existing} {
		for _, bad := range []struct {
			name   string
			value  []byte
			expiry time.Time
		}{
			{"nil value", nil, future},
			{"zero expiry", value("bad"), time.Time{}},
			{"past expiry", value("bad"), past},
		} {
			wantErr(t, "Put with "+bad.name, s.Put(ctx, key, bad.value, bad.expiry), store.ErrInvalidArgument)
			ok, err := s.PutIfAbsent(ctx, key, bad.value, bad.expiry)
			wantErr(t, "PutIfAbsent with "+bad.name, err, store.ErrInvalidArgument)
			if ok {
				t.Errorf("PutIfAbsent with %s reported a write", bad.name)
			}
			_, err = s.Swap(ctx, key, bad.value, bad.expiry)
			wantErr(t, "Swap with "+bad.name, err, store.ErrInvalidArgument)
			if bad.value != nil {
				ok, err = s.CompareAndSwap(ctx, key, v, bad.value, bad.expiry)
				wantErr(t, "CompareAndSwap with "+bad.name, err, store.ErrInvalidArgument)
				if ok {
					t.Errorf("CompareAndSwap with %s reported a write", bad.name)
				}
			}
		}
	}
	wantMissing(t, s, missing)
	wantValue(t, s, existing, v)

	wantErr(t, "Put with an empty key", s.Put(ctx, "", v, future), store.ErrInvalidArgument)
	_, err := s.Get(ctx, "")
	wantErr(t, "Get with an empty key", err, store.ErrInvalidArgument)
	_, err = s.Take(ctx, "")
	wantErr(t, "Take with an empty key", err, store.ErrInvalidArgument)
	_, err = s.PutIfAbsent(ctx, "", v, future)
	wantErr(t, "PutIfAbsent with an empty key", err, store.ErrInvalidArgument)
	_, err = s.Swap(ctx, "", v, future)
	wantErr(t, "Swap with an empty key", err, store.ErrInvalidArgument)
	_, err = s.CompareAndSwap(ctx, "", v, value("v2"), future)
	wantErr(t, "CompareAndSwap with an empty key", err, store.ErrInvalidArgument)
	wantErr(t, "Delete with an empty key", s.Delete(ctx, ""), store.ErrInvalidArgument)
	for cursor := ""; ; {
		entries, next, err := s.Scan(ctx, cursor, 100)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, e := range entries {
			if e.Key == "" || bytes.Equal(e.Value, value("bad")) {
				t.Errorf("an invalid write was stored")
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}

	wantErr(t, "Publish on an empty channel", s.Publish(ctx, "", v), store.ErrInvalidArgument)
	sub, err := s.Subscribe(ctx, "")
	wantErr(t, "Subscribe to an empty channel", err, store.ErrInvalidArgument)
	if sub != nil {
		sub.Close()
	}
}

// testNoLeaks exercises every part of a store, leaving one subscription
// open for Close to end; Run checks the goroutines afterwards.
func testNoLeaks(t *testing.T, s store.Store) {
	ctx := t.Context()
	key := newKey()
	mustPut(t, s, key, value("v"), time.Now().Add(time.Minute))
	wantValue(t, s, key, value("v"))
	if _, _, err := s.Scan(ctx, "", 10); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	channel := newKey()
	closed, err := s.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	open, err := s.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := s.Publish(ctx, channel, value("m")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	recv(t, closed)
	recv(t, open)
	if err := closed.Close(); err != nil {
		t.Fatalf("Subscription.Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitClosed(t, open)
}

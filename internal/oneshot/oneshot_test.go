package oneshot_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/storefault"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

func opts(lease time.Duration) oneshot.Options {
	return oneshot.Options{Lease: lease, Expiry: time.Now().Add(time.Minute)}
}

func TestOnce(t *testing.T) {
	st := memory.New(nil)
	defer st.Close()
	ctx := context.Background()
	const n = 16
	var wins, busy atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
			switch {
			case err == nil:
				wins.Add(1)
				if err := c.Commit(ctx); err != nil {
					t.Error(err)
				}
			case errors.Is(err, oneshot.ErrBusy), errors.Is(err, oneshot.ErrUsed):
				busy.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || busy.Load() != n-1 {
		t.Fatalf("%d claims won, %d refused", wins.Load(), busy.Load())
	}
	if _, err := oneshot.Claim(ctx, st, "k", []byte("other"), opts(time.Minute)); !errors.Is(err, oneshot.ErrUsed) {
		t.Fatalf("after commit: %v", err)
	}
}

// A resend of the same request gets the kept result; another request is
// refused.
func TestReplay(t *testing.T) {
	st := memory.New(nil)
	defer st.Close()
	ctx := context.Background()
	c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute)); !errors.Is(err, oneshot.ErrUsed) {
		t.Fatalf("before Finish: %v", err)
	}
	if err := c.Finish(ctx, []byte("result")); err != nil {
		t.Fatal(err)
	}
	var r *oneshot.Replayed
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute)); !errors.As(err, &r) || string(r.Result) != "result" {
		t.Fatalf("same request: %v", err)
	}
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fq"), opts(time.Minute)); !errors.Is(err, oneshot.ErrUsed) || errors.As(err, &r) {
		t.Fatalf("another request: %v", err)
	}
}

// A write applied with its reply lost is recognised as the claimer's own.
func TestLostReply(t *testing.T) {
	st := &storefault.Lossy{Store: memory.New(nil)}
	defer st.Close()
	ctx := context.Background()
	st.Drop.Store(true)
	c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatalf("claim with a lost reply: %v", err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatalf("commit with a lost reply: %v", err)
	}
}

// A claim that could be neither committed nor released (the store
// unreachable) does not use the marker up: after its lease a resend takes
// it over. Released, it is free at once.
func TestAbandonedClaim(t *testing.T) {
	st := &storefault.Lossy{Store: memory.New(nil)}
	defer st.Close()
	ctx := context.Background()
	st.Drop.Store(true)
	st.Blind.Store(true)
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(100*time.Millisecond)); err == nil {
		t.Fatal("claim succeeded without a store")
	}
	st.Drop.Store(false)
	st.Blind.Store(false)
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(100*time.Millisecond)); !errors.Is(err, oneshot.ErrBusy) {
		t.Fatalf("during the lease: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatalf("after the lease: %v", err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err = oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A claim whose lease ended and was taken over cannot commit.
func TestCommitAfterTakeover(t *testing.T) {
	st := memory.New(nil)
	defer st.Close()
	ctx := context.Background()
	slow, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	fast, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.Commit(ctx); !errors.Is(err, oneshot.ErrLost) {
		t.Fatalf("late commit: %v", err)
	}
	if err := fast.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func FuzzIsMarker(f *testing.F) {
	f.Add([]byte{0x6F, 'u'})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) { oneshot.IsMarker(b) })
}

// retried applies every write twice and reports the second result, as a
// client library that retried a write whose reply was lost.
type retried struct{ store.Store }

func (r retried) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	r.Store.PutIfAbsent(ctx, k, v, e)
	return r.Store.PutIfAbsent(ctx, k, v, e)
}

func (r retried) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	r.Store.CompareAndSwap(ctx, k, old, v, e)
	return r.Store.CompareAndSwap(ctx, k, old, v, e)
}

// A write applied and then retried (the retry no longer matches) is still
// the claimer's own: the claim, its commit and its result go through.
func TestRetriedWrites(t *testing.T) {
	st := retried{memory.New(nil)}
	defer st.Close()
	ctx := context.Background()
	c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := c.Finish(ctx, []byte("r")); err != nil {
		t.Fatalf("finish: %v", err)
	}
	var r *oneshot.Replayed
	if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute)); !errors.As(err, &r) {
		t.Fatalf("resend: %v", err)
	}
}

// outage fails the next reads, and its swaps as it is told: applied with
// the reply lost, or not applied at all, while the store is away.
type outage struct {
	store.Store
	readsDown  atomic.Int32 // reads that fail before the store is back
	swapsLost  atomic.Int32 // swaps applied whose reply is lost
	swapsDown  atomic.Int32 // swaps refused with an error, not applied
	readsTried atomic.Int32
}

func (o *outage) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	if o.swapsDown.Add(-1) >= 0 {
		return false, errors.New("connection refused")
	}
	ok, err := o.Store.CompareAndSwap(ctx, k, old, v, e)
	if o.swapsLost.Add(-1) >= 0 {
		return false, errors.New("connection reset")
	}
	return ok, err
}

func (o *outage) Get(ctx context.Context, k string) ([]byte, error) {
	o.readsTried.Add(1)
	if o.readsDown.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return o.Store.Get(ctx, k)
}

// A commit whose reply was lost while the store went away is recognised
// once the store is back, however many reads that takes: the work it
// protects then runs, and a resend is refused as used. (Reading back once
// and giving up lost the answer: the marker said used for a use that never
// happened.)
func TestCommitRecognisedAfterOutage(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		lost, down, readDown int32
	}{
		{"applied, reply lost, 5 reads fail", 1, 0, 5},
		{"not applied, 5 reads fail", 0, 1, 5},
		{"not applied twice, then applied with the reply lost", 1, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New(nil)
			defer mem.Close()
			st := &outage{Store: mem}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			st.swapsLost.Store(tc.lost)
			st.swapsDown.Store(tc.down)
			st.readsDown.Store(tc.readDown)
			if err := c.Commit(ctx); err != nil {
				t.Fatalf("Commit: %v (after %d reads)", err, st.readsTried.Load())
			}
			if _, err := oneshot.Claim(ctx, st, "k", []byte("fp"), opts(time.Minute)); !errors.Is(err, oneshot.ErrUsed) {
				t.Fatalf("a resend after the commit: %v, want ErrUsed", err)
			}
		})
	}
}

// While the store stays away the outcome is unknown: Commit returns an
// error (not ErrLost) when ctx ends, and the work must not run.
func TestCommitOutcomeUnknown(t *testing.T) {
	mem := memory.New(nil)
	defer mem.Close()
	st := &outage{Store: mem}
	c, err := oneshot.Claim(context.Background(), st, "k", []byte("fp"), opts(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st.swapsDown.Store(1 << 20)
	st.readsDown.Store(1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err = c.Commit(ctx)
	if err == nil || errors.Is(err, oneshot.ErrLost) {
		t.Fatalf("Commit with the store away: %v, want an error that is not ErrLost", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error does not say the wait ended: %v", err)
	}
}

package memory

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openDriver returns a store and its driver, for the tests that look
// inside.
func openDriver(opts *Options) (store.Store, *driver) {
	d := newDriver(opts)
	return store.New("memory", d, d.now), d
}

// bufferSize is the number of messages a subscription buffers.
const bufferSize = 64

// entries returns the number of entries held, expired or not.
func (s *driver) entries() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

func TestLazyExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s, d := openDriver(&Options{Clock: clock.Now, SweepInterval: -1})
	defer s.Close()
	ctx := t.Context()
	if err := s.Put(ctx, "k", []byte("v"), clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(999 * time.Millisecond)
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("Get 1ms before expiry: %v", err)
	}
	clock.Advance(time.Millisecond)
	if _, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get at expiry: %v, want ErrNotFound", err)
	}
	if n := d.entries(); n != 0 {
		t.Errorf("%d entries left after reading an expired one, want 0", n)
	}
}

func TestSweeper(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s, d := openDriver(&Options{Clock: clock.Now, SweepInterval: time.Millisecond})
	defer s.Close()
	ctx := t.Context()
	for i := range 1000 {
		expiry := clock.Now().Add(time.Second)
		if i%2 == 0 {
			expiry = clock.Now().Add(time.Hour)
		}
		if err := s.Put(ctx, fmt.Sprint(i), []byte("v"), expiry); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for d.entries() != 500 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries after sweeping, want 500", d.entries())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestScanOrder(t *testing.T) {
	s := New(nil)
	defer s.Close()
	ctx := t.Context()
	var want []string
	for i := range 100 {
		k := fmt.Sprintf("key%03d", i)
		want = append(want, k)
		if err := s.Put(ctx, k, []byte(k), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for calls := 0; ; calls++ {
		entries, next, err := s.Scan(ctx, cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			got = append(got, e.Key)
		}
		if next == "" {
			// Exactly count entries were left: no empty last call.
			if calls != 9 {
				t.Errorf("scan took %d calls, want 10", calls+1)
			}
			break
		}
		if next != entries[len(entries)-1].Key {
			t.Fatalf("cursor %q, want the last key returned", next)
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("Scan returned %q, want %q", got, want)
	}
	if _, _, err := s.Scan(ctx, "", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Scan with count 0: %v, want ErrInvalidArgument", err)
	}
}

func TestCompareAndSwapNilOld(t *testing.T) {
	s := New(nil)
	defer s.Close()
	_, err := s.CompareAndSwap(t.Context(), "k", nil, []byte("v"), time.Now().Add(time.Minute))
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("CompareAndSwap with a nil old value: %v, want ErrInvalidArgument", err)
	}
}

// TestOverflow checks that a subscriber that falls behind is told so: once
// its buffer is full, messages are dropped, and a Resubscribed notice
// follows the buffered ones.
func TestOverflow(t *testing.T) {
	s := New(nil)
	defer s.Close()
	ctx := t.Context()
	sub, err := s.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			if err := s.Publish(ctx, "c", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// drain returns what is buffered, "!" standing for a notice.
	drain := func() []string {
		var got []string
		for {
			select {
			case m := <-sub.Messages():
				if m.Resubscribed {
					got = append(got, "!")
				} else {
					got = append(got, string(m.Data))
				}
			default:
				return got
			}
		}
	}
	seq := func(from, to int) []string {
		var s []string
		for i := from; i < to; i++ {
			s = append(s, fmt.Sprint(i))
		}
		return s
	}

	publish(0, bufferSize+10)
	if got, want := drain(), append(seq(0, bufferSize), "!"); !slices.Equal(got, want) {
		t.Errorf("after overflowing: got %q, want %q", got, want)
	}

	// Once there is room, messages flow again, and a second overflow is
	// reported again.
	publish(100, 101)
	if got, want := drain(), seq(100, 101); !slices.Equal(got, want) {
		t.Errorf("after draining: got %q, want %q", got, want)
	}
	publish(200, 200+bufferSize+1)
	// While the notice is the last message buffered, it covers every
	// message dropped, even when there is room for it again.
	<-sub.Messages()
	publish(300, 302)
	if got, want := drain(), append(seq(201, 200+bufferSize), "!"); !slices.Equal(got, want) {
		t.Errorf("after a second overflow: got %q, want %q", got, want)
	}
	publish(400, 401)
	if got, want := drain(), seq(400, 401); !slices.Equal(got, want) {
		t.Errorf("after draining again: got %q, want %q", got, want)
	}
}

package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// putIfAbsentGetter is the PutIfAbsentGet of the Store store.New returns.
type putIfAbsentGetter interface {
	PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error)
}

// asPutIfAbsentGetter returns s's PutIfAbsentGet, and skips t when s has
// none (a Store that is not the Store of store.New).
func asPutIfAbsentGetter(t *testing.T, s store.Store) putIfAbsentGetter {
	t.Helper()
	g, ok := s.(putIfAbsentGetter)
	if !ok {
		t.Skipf("%T has no PutIfAbsentGet", s)
	}
	return g
}

func testPutIfAbsentGet(t *testing.T, s store.Store) {
	g := asPutIfAbsentGetter(t, s)
	ctx := t.Context()
	key, other := newKey(), newKey()
	expiry := time.Now().Add(time.Minute)

	ok, got, err := g.PutIfAbsentGet(ctx, key, value("first"), expiry, other)
	if !ok || got != nil || err != nil {
		t.Fatalf("PutIfAbsentGet, other missing = %v, %q, %v; want true, nil, nil", ok, got, err)
	}
	wantValue(t, s, key, value("first"))
	mustPut(t, s, other, value("other"), expiry)
	ok, got, err = g.PutIfAbsentGet(ctx, key, value("second"), expiry, other)
	if ok || !bytes.Equal(got, value("other")) || err != nil {
		t.Fatalf("PutIfAbsentGet over a live entry = %v, %q, %v; want false, %q, nil", ok, got, err, "other")
	}
	wantValue(t, s, key, value("first"))
	key2 := newKey()
	ok, got, err = g.PutIfAbsentGet(ctx, key2, value("third"), expiry, other)
	if !ok || !bytes.Equal(got, value("other")) || err != nil {
		t.Fatalf("PutIfAbsentGet, other present = %v, %q, %v; want true, %q, nil", ok, got, err, "other")
	}

	// The read comes after the write: reading the written key returns
	// what was just written, not what was there before.
	same := newKey()
	ok, got, err = g.PutIfAbsentGet(ctx, same, value("mine"), expiry, same)
	if !ok || !bytes.Equal(got, value("mine")) || err != nil {
		t.Fatalf("PutIfAbsentGet reading its own key = %v, %q, %v; want true, %q, nil (the read must see the write)", ok, got, err, "mine")
	}
	ok, got, err = g.PutIfAbsentGet(ctx, same, value("late"), expiry, same)
	if ok || !bytes.Equal(got, value("mine")) || err != nil {
		t.Fatalf("second PutIfAbsentGet reading its own key = %v, %q, %v; want false, %q, nil", ok, got, err, "mine")
	}
}

// testPutIfAbsentGetConcurrent: among concurrent callers exactly one
// writes, and every caller's read, coming after the write was decided,
// sees the winner's value.
func testPutIfAbsentGetConcurrent(t *testing.T, s store.Store) {
	g := asPutIfAbsentGetter(t, s)
	const callers = 50
	for round := range 3 {
		key := newKey()
		expiry := time.Now().Add(time.Minute)
		seen := make([][]byte, callers)
		winner, winners := race(callers, func(i int) bool {
			ok, got, err := g.PutIfAbsentGet(t.Context(), key, value("caller %d", i), expiry, key)
			if err != nil {
				t.Errorf("PutIfAbsentGet: %v", err)
			}
			seen[i] = got
			return ok
		})
		if winners != 1 {
			t.Fatalf("round %d: %d of %d concurrent callers wrote, want 1", round, winners, callers)
		}
		for i, got := range seen {
			if !bytes.Equal(got, value("caller %d", winner)) {
				t.Fatalf("round %d: caller %d read %q after the write, want the winner's %q", round, i, got, value("caller %d", winner))
			}
		}
	}
}

// testPutIfAbsentGetInvalid: bad arguments are ErrInvalidArgument and
// write nothing; a closed store or a done context is refused.
func testPutIfAbsentGetInvalid(t *testing.T, s store.Store) {
	g := asPutIfAbsentGetter(t, s)
	ctx := t.Context()
	future, past := time.Now().Add(time.Minute), time.Now().Add(-time.Second)
	key := newKey()
	for _, bad := range []struct {
		name       string
		key, other string
		value      []byte
		expiry     time.Time
	}{
		{"an empty key", "", key, value("v"), future},
		{"an empty other key", key, "", value("v"), future},
		{"a nil value", key, key, nil, future},
		{"a zero expiry", key, key, value("v"), time.Time{}},
		{"a past expiry", key, key, value("v"), past},
	} {
		ok, got, err := g.PutIfAbsentGet(ctx, bad.key, bad.value, bad.expiry, bad.other)
		if !errors.Is(err, store.ErrInvalidArgument) || ok || got != nil {
			t.Errorf("PutIfAbsentGet with %s = %v, %q, %v; want ErrInvalidArgument", bad.name, ok, got, err)
		}
	}
	wantMissing(t, s, key)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := g.PutIfAbsentGet(canceled, key, value("v"), future, key); !errors.Is(err, context.Canceled) {
		t.Errorf("PutIfAbsentGet with a done context: %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := g.PutIfAbsentGet(ctx, key, value("v"), future, key); !errors.Is(err, store.ErrClosed) {
		t.Errorf("PutIfAbsentGet after Close: %v, want ErrClosed", err)
	}
}

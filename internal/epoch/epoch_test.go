package epoch

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// FuzzParse: a value under Key that storage wrote (or rewrote) parses only
// when it is a canonical record, and then encodes back to itself.
func FuzzParse(f *testing.F) {
	r := Record{ID: ID{1, 2, 3, 4, 5, 6, 7, 8}, Created: time.UnixMilli(1800000000123), Previous: ID{9}}
	f.Add(r.encode())
	f.Add(r.encode()[:recordSize-1])
	f.Add(append(r.encode(), 0))
	f.Add(Record{Created: time.UnixMilli(1)}.encode()) // the zero epoch
	f.Add([]byte{0xE1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := Parse(b)
		if !ok {
			return
		}
		if r.ID.IsZero() || !bytes.Equal(r.encode(), b) {
			t.Fatalf("%x parses as %+v, which encodes to %x", b, r, r.encode())
		}
	})
}

// Nodes starting together agree on one epoch; each reads the store at most
// once per MaxAge when issuing; a flush is seen as a change once per node
// that knew the old epoch; garbage under Key is an error, never an epoch.
func TestWatcher(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var changes atomic.Int32
	ws := make([]*Watcher, 8)
	ids := make([]ID, len(ws))
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = NewWatcher(st, Options{Now: clock, OnChange: func(Change) { changes.Add(1) }})
		wg.Go(func() {
			id, err := ws[i].Current(ctx)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id.IsZero() {
			t.Fatalf("nodes disagree: %v", ids)
		}
	}
	if err := st.Delete(ctx, Key); err != nil {
		t.Fatal(err)
	}
	if id, _ := ws[0].Current(ctx); id != ids[0] {
		t.Fatal("Current read the store within MaxAge")
	}
	ok, err := ws[0].Confirm(ctx, ids[0])
	if err != nil || ok {
		t.Fatalf("Confirm of the lost epoch: %v, %v", ok, err)
	}
	mu.Lock()
	now = now.Add(DefaultMaxAge)
	mu.Unlock()
	id1, _ := ws[1].Current(ctx)
	r, err := Read(ctx, st)
	if err != nil || id1 != r.ID || id1 == ids[0] || r.Previous != ids[0] {
		t.Fatalf("after the loss: %v, record %+v, %v", id1, r, err)
	}
	if n := changes.Load(); n != 2 {
		t.Fatalf("%d changes reported, want 2", n)
	}
	if err := st.Put(ctx, Key, []byte("garbage"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := ws[2].Refresh(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage under the key: %v", err)
	}
	if _, err := Read(ctx, st); !errors.Is(err, ErrCorrupt) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Read of garbage: %v", err)
	}
}

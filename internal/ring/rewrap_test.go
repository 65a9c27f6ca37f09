package ring_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

func recordBinding(i int) envelope.Binding {
	return envelope.Binding{Purpose: "pending", Subject: fmt.Sprintf("user-%d", i%7), SessionID: fmt.Sprintf("session-%d", i), RecordID: fmt.Sprintf("elicitation-%d", i)}
}

func writeRecords(t testing.TB, k *ring.Keyring, s store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		b := recordBinding(i)
		rec, err := k.SealRecord(b, []byte(fmt.Sprintf("answer-%d", i)), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, k.StoreKey(b), rec, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
}

func mustKeyring(t testing.TB, primary string, previous ...string) *ring.Keyring {
	t.Helper()
	var prev [][]byte
	for _, p := range previous {
		prev = append(prev, []byte(p))
	}
	k, err := ring.New([]byte(primary), prev)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRewrap(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	a := mustKeyring(t, secretA)
	writeRecords(t, a, s, 120)
	marker := a.StoreKey(envelope.Binding{Purpose: "token/used", RecordID: "jti", Unbound: true})
	if err := s.Put(ctx, marker, []byte{1}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	ba := mustKeyring(t, secretB, secretA)
	var batches int
	p, err := ba.Rewrap(ctx, s, ring.RewrapOptions{BatchSize: 50, Progress: func(ring.Progress) { batches++ }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Rewrapped != 120 || p.Skipped != 1 || p.Failed != 0 || p.Cursor != "" || batches < 3 {
		t.Fatalf("progress = %+v after %d batches", p, batches)
	}
	r, err := ring.Inspect(ctx, s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Records[a.PrimaryKeyID()] != 0 || r.Records[ba.PrimaryKeyID()] != 120 || r.Markers != 1 {
		t.Fatalf("inspect = %+v", r)
	}
	// The old secret can go: B alone finds and opens every record.
	b := mustKeyring(t, secretB)
	for i := 0; i < 120; i++ {
		rec, err := b.Lookup(ctx, s, recordBinding(i))
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		pt, err := b.OpenRecord(recordBinding(i), rec)
		if err != nil || string(pt) != fmt.Sprintf("answer-%d", i) {
			t.Fatalf("record %d: %q %v", i, pt, err)
		}
	}
	// A second run finds nothing left to do.
	p, err = ba.Rewrap(ctx, s, ring.RewrapOptions{})
	if err != nil || p.Rewrapped != 0 || p.Current != 120 {
		t.Fatalf("second run: %+v %v", p, err)
	}
	if v, err := s.Get(ctx, marker); err != nil || len(v) != 1 {
		t.Fatal("marker was touched")
	}
}

func TestRewrapResumes(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	writeRecords(t, mustKeyring(t, secretA), s, 100)
	ba := mustKeyring(t, secretB, secretA)

	stop, cancel := context.WithCancel(ctx)
	first, err := ba.Rewrap(stop, s, ring.RewrapOptions{BatchSize: 30, Progress: func(ring.Progress) { cancel() }})
	if !errors.Is(err, context.Canceled) || first.Cursor == "" {
		t.Fatalf("interrupted run: %+v %v", first, err)
	}
	rest, err := ba.Rewrap(ctx, s, ring.RewrapOptions{BatchSize: 30, Cursor: first.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	if first.Rewrapped+rest.Rewrapped != 100 {
		t.Fatalf("rewrapped %d + %d, want 100", first.Rewrapped, rest.Rewrapped)
	}
}

// TestRewrapLeavesForgeriesAlone puts a record under a key its binding does
// not name, and garbage that looks like a record: rewrap counts them as
// failed and changes nothing.
func TestRewrapLeavesForgeriesAlone(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	a := mustKeyring(t, secretA)
	rec, _ := a.SealRecord(recordBinding(1), []byte("x"), time.Now().Add(time.Hour))
	misplaced := a.StoreKey(recordBinding(2))
	s.Put(ctx, misplaced, rec, time.Now().Add(time.Hour))
	garbage := append([]byte{0xE1, 0, 41}, make([]byte, 100)...)
	s.Put(ctx, "garbage", garbage, time.Now().Add(time.Hour))

	p, err := mustKeyring(t, secretB, secretA).Rewrap(ctx, s, ring.RewrapOptions{})
	if err != nil || p.Failed != 2 || p.Rewrapped != 0 {
		t.Fatalf("progress = %+v, %v", p, err)
	}
	if v, _ := s.Get(ctx, misplaced); string(v) != string(rec) {
		t.Fatal("misplaced record was changed")
	}
}

// TestRewrapUnderLoad rotates 10,000 in-flight records while other
// goroutines resolve (take and open) records concurrently: none is lost,
// none fails to open, none is taken twice, and no record remains under the
// old key ID.
func TestRewrapUnderLoad(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 2000
	}
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	writeRecords(t, mustKeyring(t, secretA), s, n)
	ba := mustKeyring(t, secretB, secretA)

	var (
		resolved atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
		taken    = make([]atomic.Int32, n)
	)
	// Resolvers take every third record, from both ends of the key space,
	// while the rewrap runs.
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if i%3 != 0 {
					continue
				}
				b := recordBinding(i)
				rec, err := ba.Take(ctx, s, b)
				if err != nil {
					failures.Add(1)
					t.Errorf("record %d: take: %v", i, err)
					continue
				}
				pt, err := ba.OpenRecord(b, rec)
				if err != nil || string(pt) != fmt.Sprintf("answer-%d", i) {
					failures.Add(1)
					t.Errorf("record %d: open: %q %v", i, pt, err)
					continue
				}
				taken[i].Add(1)
				resolved.Add(1)
			}
		}(w)
	}
	p, err := ba.Rewrap(ctx, s, ring.RewrapOptions{BatchSize: 200})
	wg.Wait()
	if err != nil || p.Failed != 0 {
		t.Fatalf("rewrap: %+v %v", p, err)
	}
	// Second pass: anything that changed under the first is done now.
	if _, err := ba.Rewrap(ctx, s, ring.RewrapOptions{}); err != nil {
		t.Fatal(err)
	}
	r, _ := ring.Inspect(ctx, s, time.Now())
	if r.Records[mustKeyring(t, secretA).PrimaryKeyID()] != 0 {
		t.Fatalf("records left under the old key ID: %+v", r.Records)
	}
	// Every record not resolved is still there, exactly once, under B alone.
	b := mustKeyring(t, secretB)
	for i := 0; i < n; i++ {
		if i%3 == 0 {
			if taken[i].Load() != 1 {
				t.Fatalf("record %d taken %d times", i, taken[i].Load())
			}
			continue
		}
		rec, err := b.Lookup(ctx, s, recordBinding(i))
		if err != nil {
			t.Fatalf("record %d lost: %v", i, err)
		}
		if _, err := b.OpenRecord(recordBinding(i), rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if r.Records[b.PrimaryKeyID()] != n-int(resolved.Load()) {
		t.Fatalf("%d records under B, want %d", r.Records[b.PrimaryKeyID()], n-int(resolved.Load()))
	}
}

// An answer in transit (purpose ending in /result) stays where it was
// written: a waiter looking under each secret's key cannot miss it between
// two places.
func TestRewrapLeavesAnswersInTransit(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	a := mustKeyring(t, secretA)
	b := envelope.Binding{Purpose: "elicit/result", Subject: "u", SessionID: "s", RecordID: "e"}
	rec, err := a.SealRecord(b, []byte("accept"), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, a.StoreKey(b), rec, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ba := mustKeyring(t, secretB, secretA)
	p, err := ba.Rewrap(ctx, s, ring.RewrapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.InTransit != 1 || p.Rewrapped != 0 {
		t.Fatalf("progress %+v", p)
	}
	if got, err := s.Get(ctx, a.StoreKey(b)); err != nil || string(got) != string(rec) {
		t.Fatalf("the answer moved: %v", err)
	}
	if got, err := ba.Take(ctx, s, b); err != nil || string(got) != string(rec) {
		t.Fatalf("the waiter's lookup: %v", err)
	}
}

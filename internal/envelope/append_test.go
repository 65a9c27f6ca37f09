package envelope_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
)

var unbound = envelope.Binding{Purpose: "token/url", Unbound: true}

func TestAppendRoundTrip(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	for _, b := range []envelope.Binding{binding, unbound} {
		for _, n := range []int{0, 1, 100, 5000} {
			pt := bytes.Repeat([]byte{'p'}, n)
			sealed, err := s.AppendSeal([]byte("prefix"), b, pt, t0.Add(time.Minute))
			if err != nil || !bytes.HasPrefix(sealed, []byte("prefix")) || len(sealed) != 6+n+envelope.Overhead {
				t.Fatalf("%d bytes: AppendSeal = %d bytes, %v", n, len(sealed), err)
			}
			sealed = sealed[6:]
			// Each form opens what the other sealed.
			if got, err := s.Open(b, sealed); err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("%d bytes: Open(AppendSeal) = %v", n, err)
			}
			again, err := s.Seal(b, pt, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			got, h, err := s.AppendOpen([]byte("prefix"), b, again)
			if err != nil || !bytes.Equal(got, append([]byte("prefix"), pt...)) {
				t.Fatalf("%d bytes: AppendOpen(Seal) = %v", n, err)
			}
			if h.KeyID != secretA.KeyID() || !h.Expiry.Equal(t0.Add(time.Minute)) {
				t.Fatalf("header = %+v", h)
			}
		}
	}
}

func TestAppendInPlace(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	pt := []byte("confirm: delete 47 contacts")
	buf := make([]byte, len(pt), 256)
	copy(buf, pt)
	sealed, err := s.AppendSeal(buf[:0], binding, buf, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	opened, _, err := s.AppendOpen(sealed[:0], binding, sealed)
	if err != nil || !bytes.Equal(opened, pt) {
		t.Fatalf("in place: %q, %v", opened, err)
	}
}

func TestAppendOpenRejects(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	sealed, err := s.AppendSeal(nil, binding, []byte("answer"), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	dst := []byte("kept")
	check := func(name string, b envelope.Binding, rec []byte, want error) {
		t.Helper()
		got, _, err := s.AppendOpen(dst, b, rec)
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", name, err, want)
		}
		if string(got) != "kept" {
			t.Errorf("%s: dst changed to %q", name, got)
		}
	}
	for i := range sealed {
		flipped := bytes.Clone(sealed)
		flipped[i] ^= 0x01
		want := envelope.ErrInvalid
		if i >= 1 && i < 5 {
			want = envelope.ErrUnknownKey
		}
		check("flip", binding, flipped, want)
	}
	check("truncated", binding, sealed[:len(sealed)-1], envelope.ErrInvalid)
	check("short", binding, sealed[:envelope.Overhead-1], envelope.ErrInvalid)
	other := binding
	other.SessionID = "sess-other"
	check("other session", other, sealed, envelope.ErrInvalid)
	check("unbound", unbound, sealed, envelope.ErrInvalid)
	c.t = t0.Add(time.Minute)
	check("expired", binding, sealed, envelope.ErrExpired)
	s2 := newSealer(t, c, secretB)
	if _, _, err := s2.AppendOpen(nil, binding, sealed); !errors.Is(err, envelope.ErrUnknownKey) {
		t.Errorf("other secret: %v", err)
	}
}

// TestAppendConcurrent seals and opens under one binding from many
// goroutines, so that most calls find the key's scratch buffer busy.
func TestAppendConcurrent(t *testing.T) {
	s, err := envelope.New(secretA, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var buf, out [256]byte
			for i := range 500 {
				pt := []byte{byte(g), byte(i), byte(i >> 8), 'x'}
				sealed, err := s.AppendSeal(buf[:0], unbound, pt, time.Now().Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				got, _, err := s.AppendOpen(out[:0], unbound, sealed)
				if err != nil || !bytes.Equal(got, pt) {
					t.Errorf("goroutine %d, %d: %q, %v", g, i, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestAppendAllocatesNothing is why AppendSeal and AppendOpen exist.
func TestAppendAllocatesNothing(t *testing.T) {
	s, err := envelope.New(secretA, nil)
	if err != nil {
		t.Fatal(err)
	}
	pt := bytes.Repeat([]byte{'p'}, 80)
	var buf, out [256]byte
	expiry := time.Now().Add(time.Hour)
	allocs := testing.AllocsPerRun(100, func() {
		sealed, err := s.AppendSeal(buf[:0], unbound, pt, expiry)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendOpen(out[:0], unbound, sealed); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendSeal + AppendOpen: %.1f allocations, want 0", allocs)
	}
}

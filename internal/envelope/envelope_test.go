package envelope_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

var (
	secretA = mustSecret("secret-A secret-A secret-A secret-A!")
	secretB = mustSecret("secret-B secret-B secret-B secret-B!")
	t0      = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
)

func mustSecret(s string) *keyschedule.Secret {
	sec, err := keyschedule.New([]byte(s))
	if err != nil {
		panic(err)
	}
	return sec
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newSealer(t *testing.T, c *clock, primary *keyschedule.Secret, previous ...*keyschedule.Secret) *envelope.Sealer {
	t.Helper()
	s, err := envelope.New(primary, previous, envelope.WithClock(c.now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantInvalid fails t, naming what, unless s refuses sealed under b with
// ErrInvalid.
func wantInvalid(t *testing.T, s *envelope.Sealer, b envelope.Binding, sealed []byte, what string) {
	t.Helper()
	if _, err := s.Open(b, sealed); !errors.Is(err, envelope.ErrInvalid) {
		t.Fatalf("%s: err = %v, want ErrInvalid", what, err)
	}
}

var binding = envelope.Binding{Purpose: "pending", Subject: "alice@example.com", SessionID: "sess-0123456789", RecordID: "elicit-42"}

func TestRoundTrip(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	for _, pt := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("p"), 4096)} {
		sealed, err := s.Seal(binding, pt, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(sealed) != len(pt)+envelope.Overhead || envelope.Overhead > 48 {
			t.Fatalf("len = %d for %d bytes, overhead %d", len(sealed), len(pt), envelope.Overhead)
		}
		got, err := s.Open(binding, sealed)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("open = %q, %v", got, err)
		}
	}
}

func TestNoncesDiffer(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	a, _ := s.Seal(binding, []byte("same"), t0.Add(time.Minute))
	b, _ := s.Seal(binding, []byte("same"), t0.Add(time.Minute))
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are identical")
	}
}

// TestEveryByteFlip changes each byte of a sealed record in turn, every bit
// pattern a single XOR can make at that position for a few masks, and
// requires each result to be rejected as ErrInvalid (or ErrUnknownKey when
// the change hits the key ID, which names no configured secret).
func TestEveryByteFlip(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	sealed, err := s.Seal(binding, []byte("the user's answer: 47 contacts"), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(sealed)
			bad[i] ^= mask
			_, err := s.Open(binding, bad)
			switch {
			case i >= 1 && i < 5:
				if !errors.Is(err, envelope.ErrUnknownKey) {
					t.Fatalf("byte %d ^ %#x: err = %v, want ErrUnknownKey", i, mask, err)
				}
			default:
				if !errors.Is(err, envelope.ErrInvalid) {
					t.Fatalf("byte %d ^ %#x: err = %v, want ErrInvalid", i, mask, err)
				}
			}
		}
	}
	// Truncation and extension are tampering too.
	for n := range sealed {
		wantInvalid(t, s, binding, sealed[:n], fmt.Sprintf("truncated to %d", n))
	}
	wantInvalid(t, s, binding, append(bytes.Clone(sealed), 0), "extended")
}

// TestKeyIDFlipUnderKnownKey rewrites the key ID to another configured
// secret's: the tag must then fail, not the lookup.
func TestKeyIDSwappedToKnownKey(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA, secretB)
	sealed, _ := s.Seal(binding, []byte("x"), t0.Add(time.Minute))
	id := secretB.KeyID()
	copy(sealed[1:5], id[:])
	wantInvalid(t, s, binding, sealed, "key ID swapped to a known key")
}

func TestWrongBinding(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	sealed, _ := s.Seal(binding, []byte("x"), t0.Add(time.Minute))
	wrong := map[string]func(b *envelope.Binding){
		"session":    func(b *envelope.Binding) { b.SessionID = "sess-other" },
		"subject":    func(b *envelope.Binding) { b.Subject = "mallory@example.com" },
		"no subject": func(b *envelope.Binding) { b.Subject = "" },
		"purpose":    func(b *envelope.Binding) { b.Purpose = "result" },
		"record":     func(b *envelope.Binding) { b.RecordID = "elicit-43" },
		// Moving bytes between adjacent fields must not collide.
		"shifted boundary": func(b *envelope.Binding) {
			b.Subject, b.SessionID = binding.Subject+"s", strings.TrimPrefix(binding.SessionID, "s")
		},
	}
	for name, change := range wrong {
		b := binding
		change(&b)
		if _, err := s.Open(b, sealed); !errors.Is(err, envelope.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestExpiryOnlyAfterTag(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	sealed, _ := s.Seal(binding, []byte("x"), t0.Add(time.Minute))
	c.t = t0.Add(time.Minute - time.Millisecond)
	if _, err := s.Open(binding, sealed); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	c.t = t0.Add(time.Minute)
	if _, err := s.Open(binding, sealed); !errors.Is(err, envelope.ErrExpired) {
		t.Fatalf("at expiry: err = %v, want ErrExpired", err)
	}
	// An expired record that was also tampered with is invalid, not expired:
	// expiry is only reported for authentic records.
	bad := bytes.Clone(sealed)
	bad[len(bad)-1] ^= 1
	wantInvalid(t, s, binding, bad, "tampered and expired")
	// Extending the expiry in the header breaks the tag.
	bad = bytes.Clone(sealed)
	bad[12]++
	wantInvalid(t, s, binding, bad, "extended expiry")
	// Expired under the wrong binding is invalid too.
	b := binding
	b.SessionID = "sess-other"
	wantInvalid(t, s, b, sealed, "expired, wrong session")
}

func TestRotation(t *testing.T) {
	c := &clock{t0}
	oldSealer := newSealer(t, c, secretA)
	sealed, _ := oldSealer.Seal(binding, []byte("in flight"), t0.Add(time.Minute))

	rotated := newSealer(t, c, secretB, secretA)
	got, err := rotated.Open(binding, sealed)
	if err != nil || string(got) != "in flight" {
		t.Fatalf("primary B + previous A: %q, %v", got, err)
	}
	onlyB := newSealer(t, c, secretB)
	if _, err := onlyB.Open(binding, sealed); !errors.Is(err, envelope.ErrUnknownKey) {
		t.Fatalf("B alone: err = %v, want ErrUnknownKey", err)
	}

	resealed, err := rotated.Reseal(binding, sealed)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := envelope.ParseHeader(resealed)
	if h.KeyID != secretB.KeyID() || !h.Expiry.Equal(t0.Add(time.Minute)) {
		t.Fatalf("resealed header = %v %v", h.KeyID, h.Expiry)
	}
	if got, err := onlyB.Open(binding, resealed); err != nil || string(got) != "in flight" {
		t.Fatalf("resealed under B alone: %q, %v", got, err)
	}
}

func TestDuplicateKeyID(t *testing.T) {
	if _, err := envelope.New(secretA, []*keyschedule.Secret{secretB, mustSecret("secret-A secret-A secret-A secret-A!")}); !errors.Is(err, envelope.ErrDuplicateKeyID) {
		t.Fatalf("err = %v, want ErrDuplicateKeyID", err)
	}
}

func TestParseHeaderWithoutKey(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	exp := t0.Add(90 * time.Second)
	sealed, _ := s.Seal(binding, []byte("x"), exp)
	h, err := envelope.ParseHeader(sealed)
	if err != nil || h.KeyID != secretA.KeyID() || !h.Expiry.Equal(exp) {
		t.Fatalf("header = %+v, %v", h, err)
	}
	if _, err := envelope.ParseHeader(sealed[:envelope.Overhead-1]); !errors.Is(err, envelope.ErrInvalid) {
		t.Fatalf("short: %v", err)
	}
}

func TestBindingRules(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	bad := []envelope.Binding{
		{Purpose: "pending", Subject: "u"},                    // session key without session
		{Purpose: "token/url", SessionID: "s", Unbound: true}, // unbound with a session
		{Purpose: "token/url", Subject: "u", Unbound: true},   // unbound with a subject
		{Purpose: "Pending", SessionID: "s"},                  // bad purpose
		{Purpose: "pend\x00\x00\x00\x01x", SessionID: "s"},    // purpose imitating a field
	}
	for _, b := range bad {
		if _, err := s.Seal(b, []byte("x"), t0.Add(time.Minute)); !errors.Is(err, envelope.ErrBinding) {
			t.Errorf("seal %+v: err = %v, want ErrBinding", b, err)
		}
	}
	// An unbound record does not open as a session record and vice versa.
	ub := envelope.Binding{Purpose: "token/url", RecordID: "r", Unbound: true}
	sealed, err := s.Seal(ub, []byte("x"), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Open(ub, sealed); err != nil || string(got) != "x" {
		t.Fatalf("unbound round trip: %q %v", got, err)
	}
	wantInvalid(t, s, envelope.Binding{Purpose: "token/url", SessionID: "s", RecordID: "r"}, sealed, "unbound opened as bound")
	if _, err := s.Seal(binding, []byte("x"), time.Time{}); err == nil {
		t.Fatal("seal without expiry succeeded")
	}
}

// TestErrorsCarryNothing opens records in every failing way and checks that
// no error text carries the plaintext, the binding's values or key material.
func TestErrorsCarryNothing(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	plaintext := "PLAINTEXT-card-4111111111111111"
	sealed, _ := s.Seal(binding, []byte(plaintext), t0.Add(time.Minute))
	key, _ := secretA.Key("pending", binding.Subject, binding.SessionID)

	var errs []error
	collect := func(_ []byte, err error) { errs = append(errs, err) }
	tampered := bytes.Clone(sealed)
	tampered[20] ^= 1
	collect(s.Open(binding, tampered))
	wrong := binding
	wrong.SessionID = "sess-attacker-zzz"
	collect(s.Open(wrong, sealed))
	collect(newSealer(t, c, secretB).Open(binding, sealed))
	c.t = t0.Add(time.Hour)
	collect(s.Open(binding, sealed))
	collect(s.Reseal(binding, sealed))
	collect(s.Seal(envelope.Binding{Purpose: "BAD", Subject: binding.Subject, SessionID: binding.SessionID}, []byte(plaintext), t0))
	collect(s.Open(binding, sealed[:10]))
	_, err := envelope.New(secretA, []*keyschedule.Secret{secretA})
	errs = append(errs, err)

	forbidden := []string{plaintext, binding.Subject, binding.SessionID, binding.RecordID, wrong.SessionID,
		string(key), hexOf(key), "secret-A", "secret-B"}
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		for _, f := range forbidden {
			if strings.Contains(err.Error(), f) {
				t.Errorf("error %q carries %q", err, f)
			}
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestCacheIsBounded(t *testing.T) {
	c := &clock{t0}
	s, err := envelope.New(secretA, nil, envelope.WithClock(c.now), envelope.WithCacheSize(8))
	if err != nil {
		t.Fatal(err)
	}
	var sealed [][]byte
	for i := 0; i < 100; i++ {
		b := binding
		b.SessionID = "sess-" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		out, err := s.Seal(b, []byte("x"), t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, out)
	}
	if n := envelope.CacheLen(s); n != 8 {
		t.Fatalf("cache holds %d keys, want 8", n)
	}
	// Evicted keys are derived again: every record still opens.
	for i, out := range sealed {
		b := binding
		b.SessionID = "sess-" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		if _, err := s.Open(b, out); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

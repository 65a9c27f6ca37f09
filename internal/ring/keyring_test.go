package ring_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
)

const (
	secretA = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	secretB = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	secretC = "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    error
		mention string
	}{
		{"missing", map[string]string{}, ring.ErrNoSecret, ring.EnvSecret},
		{"short", map[string]string{ring.EnvSecret: "too-short"}, ring.ErrShortSecret, ring.EnvSecret},
		{"short previous", map[string]string{ring.EnvSecret: secretA, ring.EnvPrevious: secretB + ",short"}, ring.ErrShortSecret, "entry 2"},
		{"empty previous entry", map[string]string{ring.EnvSecret: secretA, ring.EnvPrevious: secretB + ","}, nil, "entry 2"},
		{"space after comma", map[string]string{ring.EnvSecret: secretA, ring.EnvPrevious: secretB + ", " + secretC}, nil, "whitespace"},
		{"duplicate", map[string]string{ring.EnvSecret: secretA, ring.EnvPrevious: secretB + "," + secretA}, ring.ErrDuplicateKeyID, ""},
	}
	for _, c := range cases {
		_, err := ring.Load(ring.LoadOptions{Getenv: env(c.env)})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.mention)
		}
		for _, s := range []string{secretA, secretB, "too-short", "short"} {
			if strings.Contains(err.Error(), s) && s != "short" {
				t.Errorf("%s: error carries a secret", c.name)
			}
		}
	}
}

func TestLoadEphemeral(t *testing.T) {
	var warned []string
	k, err := ring.Load(ring.LoadOptions{Getenv: env(nil), AllowEphemeral: true, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "ephemeral") {
		t.Fatalf("warnings = %q", warned)
	}
	k2, _ := ring.Load(ring.LoadOptions{Getenv: env(nil), AllowEphemeral: true})
	if k.PrimaryKeyID() == k2.PrimaryKeyID() {
		t.Fatal("two ephemeral secrets are the same")
	}
	// With a secret set, nothing is generated and nothing warns.
	warned = nil
	k3, err := ring.Load(ring.LoadOptions{Getenv: env(map[string]string{ring.EnvSecret: secretA}), AllowEphemeral: true, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil || len(warned) != 0 {
		t.Fatalf("err %v, warned %q", err, warned)
	}
	ka, _ := ring.New([]byte(secretA), nil)
	if k3.PrimaryKeyID() != ka.PrimaryKeyID() {
		t.Fatal("loaded keyring does not use the given secret")
	}
}

func TestGenerateSecret(t *testing.T) {
	s := ring.GenerateSecret()
	if len(s) != 43 || strings.ContainsAny(s, "+/=") {
		t.Fatalf("secret %q is not 43 base64url characters", s)
	}
	if _, err := ring.New([]byte(s), nil); err != nil {
		t.Fatal(err)
	}
}

var binding = envelope.Binding{Purpose: "pending", Subject: "alice", SessionID: "session-1", RecordID: "elicitation-1"}

func TestRecordRotation(t *testing.T) {
	a, _ := ring.New([]byte(secretA), nil)
	ba, _ := ring.New([]byte(secretB), [][]byte{[]byte(secretA)})
	b, _ := ring.New([]byte(secretB), nil)
	rec, err := a.SealRecord(binding, []byte("answer"), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ba.OpenRecord(binding, rec); err != nil || string(got) != "answer" {
		t.Fatalf("B+A: %q %v", got, err)
	}
	if _, err := b.OpenRecord(binding, rec); !errors.Is(err, envelope.ErrUnknownKey) {
		t.Fatalf("B alone: %v", err)
	}
	other := binding
	other.SessionID = "session-2"
	if _, err := ba.OpenRecord(other, rec); !errors.Is(err, envelope.ErrInvalid) {
		t.Fatalf("other session: %v", err)
	}
	for i := range rec {
		bad := bytes.Clone(rec)
		bad[i] ^= 0x40
		if _, err := ba.OpenRecord(binding, bad); err == nil {
			t.Fatalf("byte %d flipped: record still opens", i)
		}
	}
	h, err := ring.RecordHeader(rec)
	if err != nil || h.KeyID != a.PrimaryKeyID() {
		t.Fatalf("header: %v %v", h, err)
	}
	if bytes.Contains(rec, []byte("session-1")) || bytes.Contains(rec, []byte("alice")) || bytes.Contains(rec, []byte("answer")) {
		t.Fatal("record carries plaintext")
	}
}

func TestStoreKeys(t *testing.T) {
	ba, _ := ring.New([]byte(secretB), [][]byte{[]byte(secretA)})
	a, _ := ring.New([]byte(secretA), nil)
	keys := ba.StoreKeys(binding)
	if len(keys) != 2 || keys[0] != ba.StoreKey(binding) || keys[1] != a.StoreKey(binding) || keys[0] == keys[1] {
		t.Fatalf("keys = %q", keys)
	}
	if k, ok := ba.StoreKeyUnder(a.PrimaryKeyID(), binding); !ok || k != keys[1] {
		t.Fatal("StoreKeyUnder(previous)")
	}
	if len(keys[0]) != 43 || strings.Contains(keys[0], "session") {
		t.Fatalf("key %q is not a blinded 43-character key", keys[0])
	}
	seen := map[string]bool{keys[0]: true}
	for _, b := range []envelope.Binding{
		{Purpose: "pending", Subject: "alic", SessionID: "esession-1", RecordID: "elicitation-1"},
		{Purpose: "pending", Subject: "alice", SessionID: "session-1", RecordID: "elicitation-2"},
		{Purpose: "result", Subject: "alice", SessionID: "session-1", RecordID: "elicitation-1"},
		{Purpose: "pending", Subject: "", SessionID: "session-1", RecordID: "elicitation-1"},
	} {
		k := ba.StoreKey(b)
		if seen[k] {
			t.Fatalf("binding %+v collides", b)
		}
		seen[k] = true
	}
	c, _ := ring.New([]byte(secretC), nil)
	if _, ok := c.StoreKeyUnder(a.PrimaryKeyID(), binding); ok {
		t.Fatal("StoreKeyUnder an unknown key ID succeeded")
	}
}

// TestRecordExpiredOnlyWhenBothPartsVerify: a record whose payload is
// authentic and expired but whose binding box is garbage is invalid, not
// expired (found by FuzzOpenRecord).
func TestRecordExpiredOnlyWhenBothPartsVerify(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	k, _ := ring.New([]byte(secretA), nil, envelope.WithClock(clock))
	rec, err := k.SealRecord(binding, []byte("answer"), now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := k.OpenRecord(binding, rec); !errors.Is(err, envelope.ErrExpired) {
		t.Fatalf("expired record: %v", err)
	}
	bad := bytes.Clone(rec)
	bad[10] ^= 1 // inside the binding box
	if _, err := k.OpenRecord(binding, bad); !errors.Is(err, envelope.ErrInvalid) {
		t.Fatalf("expired record with a forged box: %v, want ErrInvalid", err)
	}
}

package envelope_test

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
)

// v1Record was sealed by v0.1 (version 1), at v1Time, for v1Binding, with
// the secret v1Secret: the plaintext "sealed by v0.1", expiring an hour later.
const v1Record = "011d0af39f000001a21d175c8096898abd09c0259feb96be7bd1bf6dbae45a4a68d689a0e8a2bc5d6ce0303820c94763fc2221bf67b249"

var (
	v1Secret  = mustSecret("elicitvault-v1-vector-secret-0123456789")
	v1Time    = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	v1Binding = envelope.Binding{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"}
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A record of the release before (version 1) still opens, under its
// binding only, and Reseal writes it as version 2.
func TestOpensVersion1(t *testing.T) {
	s := newSealer(t, &clock{v1Time}, v1Secret)
	rec := mustHex(t, v1Record)
	pt, h, err := s.OpenHeader(v1Binding, rec)
	if err != nil || string(pt) != "sealed by v0.1" {
		t.Fatalf("OpenHeader = %q, %v", pt, err)
	}
	if h.Version != 1 || !h.Expiry.Equal(v1Time.Add(time.Hour)) {
		t.Errorf("header %+v", h)
	}
	for _, wrong := range []envelope.Binding{
		{Purpose: "result", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"},
		{Purpose: "pending", Subject: "user-2", SessionID: "session-1", RecordID: "elicitation-1"},
		{Purpose: "pending", Subject: "user-1", SessionID: "session-2", RecordID: "elicitation-1"},
		{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-2"},
	} {
		if _, err := s.Open(wrong, rec); !errors.Is(err, envelope.ErrInvalid) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid", wrong, err)
		}
	}
	got, _, err := s.AppendOpen(nil, v1Binding, rec)
	if err != nil || string(got) != "sealed by v0.1" {
		t.Fatalf("AppendOpen = %q, %v", got, err)
	}

	fresh, err := s.Reseal(v1Binding, rec)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := envelope.ParseHeader(fresh)
	if fresh[0] != envelope.Version || h2.Version != envelope.Version || !h2.Expiry.Equal(h.Expiry) {
		t.Errorf("resealed header %x, %+v", fresh[:envelope.HeaderSize], h2)
	}
	if pt, err := s.Open(v1Binding, fresh); err != nil || string(pt) != "sealed by v0.1" {
		t.Errorf("Open(resealed) = %q, %v", pt, err)
	}
}

// The additional data of a version 2 record is its header and its record
// ID, and its key the purpose key of its binding: a record opens with
// nothing but AES-256-GCM, the key schedule and that AAD.
func TestVersion2Format(t *testing.T) {
	c := &clock{t0}
	s := newSealer(t, c, secretA)
	for _, b := range []envelope.Binding{
		{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"},
		{Purpose: "pending", SessionID: "session-1"},
		{Purpose: "token/url", Unbound: true, RecordID: "ev2"},
	} {
		rec, err := s.Seal(b, []byte("plaintext"), t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if rec[0] != 0x02 {
			t.Fatalf("version byte %#x", rec[0])
		}
		var key []byte
		if b.Unbound {
			key, err = secretA.Key(b.Purpose)
		} else {
			key, err = secretA.Key(b.Purpose, b.Subject, b.SessionID)
		}
		if err != nil {
			t.Fatal(err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			t.Fatal(err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			t.Fatal(err)
		}
		h := envelope.HeaderSize
		aad := append(append([]byte{}, rec[:h]...), b.RecordID...)
		pt, err := gcm.Open(nil, rec[h:h+12], rec[h+12:], aad)
		if err != nil || string(pt) != "plaintext" {
			t.Errorf("%+v: raw AES-GCM open = %q, %v", b, pt, err)
		}
	}
}

// The version byte is authenticated: a record relabelled as the other
// version does not open.
func TestVersionRelabelled(t *testing.T) {
	s := newSealer(t, &clock{v1Time}, v1Secret)
	v2, err := s.Seal(v1Binding, []byte("x"), v1Time.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string][]byte{
		"version 2 as 1": append([]byte{0x01}, v2[1:]...),
		"version 1 as 2": append([]byte{0x02}, mustHex(t, v1Record)[1:]...),
		"version 3":      append([]byte{0x03}, v2[1:]...),
		"version 0":      append([]byte{0x00}, v2[1:]...),
	} {
		if _, err := s.Open(v1Binding, rec); !errors.Is(err, envelope.ErrInvalid) {
			t.Errorf("%s: Open = %v, want ErrInvalid", name, err)
		}
		if _, _, err := s.AppendOpen(nil, v1Binding, rec); !errors.Is(err, envelope.ErrInvalid) {
			t.Errorf("%s: AppendOpen = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := envelope.ParseHeader(append([]byte{0x03}, v2[1:]...)); !errors.Is(err, envelope.ErrInvalid) {
		t.Errorf("ParseHeader of version 3 = %v", err)
	}
}

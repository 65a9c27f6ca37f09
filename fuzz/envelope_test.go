package fuzz

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// The keyring of the envelope targets: primary A, previous B. C is a
// secret nobody configured.
const (
	rawSecretA = "fuzz secret A: thirty-two bytes or more, fixed forever"
	rawSecretB = "fuzz secret B: thirty-two bytes or more, fixed forever"
	rawSecretC = "fuzz secret C: thirty-two bytes or more, never configured"
)

var (
	secretA = mustSecret(rawSecretA)
	secretB = mustSecret(rawSecretB)
	secretC = mustSecret(rawSecretC)

	// fuzzNow is the clock of every sealer here: seeds never expire by
	// themselves between runs.
	fuzzNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later   = fuzzNow.Add(time.Hour)
	earlier = fuzzNow.Add(-time.Second)

	// target is the binding every target opens under.
	target = envelope.Binding{Purpose: "pending", Subject: "alice", SessionID: "sess-1", RecordID: "rec-1"}
	other  = envelope.Binding{Purpose: "pending", Subject: "alice", SessionID: "sess-2", RecordID: "rec-1"}
)

func mustSecret(s string) *keyschedule.Secret {
	sec, err := keyschedule.New([]byte(s))
	if err != nil {
		panic(err)
	}
	return sec
}

func fixedClock() time.Time { return fuzzNow }

// sealWith builds a sealed record as SECURITY.md specifies it, with a nonce
// of the caller's choosing, so that seeds are the same in every run. It is
// written from the format's description, not from package envelope.
//
//	version 0x02 || key ID (4) || expiry (8, big-endian Unix ms) || nonce (12) || ciphertext || tag (16)
//	AAD = header || record ID
func sealWith(secret *keyschedule.Secret, b envelope.Binding, nonce byte, plaintext []byte, expiry time.Time) []byte {
	return sealVersion(2, secret, b, nonce, plaintext, expiry)
}

// sealVersion is sealWith for a record of the given version: 2, or 1, the
// version of releases before v0.2, whose AAD is
// header || lp(purpose) || lp(subject) || lp(session ID) || lp(record ID).
func sealVersion(version byte, secret *keyschedule.Secret, b envelope.Binding, nonce byte, plaintext []byte, expiry time.Time) []byte {
	binding := []string{b.Subject, b.SessionID}
	if b.Unbound {
		binding = nil
	}
	key, err := secret.Key(b.Purpose, binding...)
	if err != nil {
		panic(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	id := secret.KeyID()
	header := append([]byte{version}, id[:]...)
	header = binary.BigEndian.AppendUint64(header, uint64(expiry.UnixMilli()))
	aad := append([]byte(nil), header...)
	if version == 1 {
		for _, f := range []string{b.Purpose, b.Subject, b.SessionID, b.RecordID} {
			aad = lp(aad, f)
		}
	} else {
		aad = append(aad, b.RecordID...)
	}
	n := make([]byte, 12)
	n[11] = nonce
	out := append(header, n...)
	return gcm.Seal(out, n, plaintext, aad)
}

func lp(dst []byte, f string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f)))
	return append(dst, f...)
}

// storedWith builds a stored record: 0xE1 || len(box) (2) || box || payload,
// where box is sealed for the unbound purpose "record/binding" and holds
// lp(purpose) || lp(subject) || lp(session) || lp(record) || unbound byte.
func storedWith(boxSecret, payloadSecret *keyschedule.Secret, named, sealedFor envelope.Binding, nonce byte, plaintext []byte, expiry time.Time) []byte {
	var raw []byte
	for _, f := range []string{named.Purpose, named.Subject, named.SessionID, named.RecordID} {
		raw = lp(raw, f)
	}
	raw = append(raw, 0)
	box := sealWith(boxSecret, envelope.Binding{Purpose: "record/binding", Unbound: true}, nonce, raw, expiry)
	payload := sealWith(payloadSecret, sealedFor, nonce+1, plaintext, expiry)
	out := []byte{0xE1}
	out = binary.BigEndian.AppendUint16(out, uint16(len(box)))
	out = append(out, box...)
	return append(out, payload...)
}

// seed is an input whose outcome is known: want is nil for a record that
// opens (to plaintext), or the error it must give.
type seed struct {
	data      []byte
	want      error
	plaintext []byte

	// For stored records: both parts sealed for target under configured
	// secrets, and whether they are expired.
	authentic, expired bool
}

// known holds the inputs of a target whose outcome is fixed; any other
// input must be rejected as invalid or unknown key.
type known map[string]seed

func (k known) add(f *testing.F, s seed) {
	f.Add(s.data)
	k[string(s.data)] = s
}

// addMutations adds inputs derived from data (truncations, flipped bytes,
// an extra byte), which are not known: they must be rejected.
func addMutations(f *testing.F, data []byte) {
	for _, n := range []int{0, 1, 3, 5, 12, 13, 24, 25, 40, 41, 42, len(data) - 16, len(data) - 1} {
		if n >= 0 && n < len(data) {
			f.Add(bytes.Clone(data[:n]))
		}
	}
	for _, i := range []int{0, 1, 4, 5, 12, 13, 25, 30, len(data) - 17, len(data) - 1} {
		if i >= 0 && i < len(data) {
			d := bytes.Clone(data)
			d[i] ^= 0x01
			f.Add(d)
		}
	}
	f.Add(append(bytes.Clone(data), 0))
}

// checkRejection fails t unless err is a rejection an input that is not a
// known record may get.
func checkRejection(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, envelope.ErrInvalid) && !errors.Is(err, envelope.ErrUnknownKey) {
		t.Fatalf("an input that is no known record gave %v, want invalid or unknown key", err)
	}
}

// checkKnown fails t unless a known input got its outcome.
func checkKnown(t *testing.T, s seed, plaintext []byte, err error) {
	t.Helper()
	if s.want == nil {
		if err != nil || !bytes.Equal(plaintext, s.plaintext) {
			t.Fatalf("an authentic record gave %q, %v", plaintext, err)
		}
		return
	}
	if !errors.Is(err, s.want) {
		t.Fatalf("a known record gave %v, want %v", err, s.want)
	}
}

// checkErrorText fails t if an error's text carries plaintext or binding
// values.
func checkErrorText(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{"alice", "sess-", "rec-1", "plaintext-"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error %q carries %q", err, s)
		}
	}
}

// FuzzOpen opens arbitrary bytes as a sealed record under a fixed binding.
// It must never panic; it may succeed, or report expired, only for one of
// the authentic seeds; anything else is invalid or unknown key, and
// unknown key only for a header that parses and names no configured key.
func FuzzOpen(f *testing.F) {
	sealer, err := envelope.New(secretA, []*keyschedule.Secret{secretB}, envelope.WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	k := known{}
	big := bytes.Repeat([]byte("plaintext-big "), 1<<16/14)
	for i, s := range []seed{
		{data: sealWith(secretA, target, 1, nil, later), plaintext: nil},
		{data: sealWith(secretA, target, 2, []byte("plaintext-x"), later), plaintext: []byte("plaintext-x")},
		{data: sealWith(secretA, target, 3, bytes.Repeat([]byte("plaintext-512 "), 512/14), later), plaintext: bytes.Repeat([]byte("plaintext-512 "), 512/14)},
		{data: sealWith(secretB, target, 4, []byte("plaintext-previous"), later), plaintext: []byte("plaintext-previous")},
		{data: sealWith(secretA, target, 5, big, later), plaintext: big},
		{data: sealWith(secretA, target, 6, []byte("plaintext-expired"), earlier), want: envelope.ErrExpired},
		{data: sealWith(secretA, target, 7, []byte("plaintext-now"), fuzzNow), want: envelope.ErrExpired},
		{data: sealWith(secretA, other, 8, []byte("plaintext-other"), later), want: envelope.ErrInvalid},
		{data: sealWith(secretA, envelope.Binding{Purpose: "result", Subject: "alice", SessionID: "sess-1", RecordID: "rec-1"}, 9, []byte("plaintext-purpose"), later), want: envelope.ErrInvalid},
		{data: sealWith(secretA, envelope.Binding{Purpose: "pending", Unbound: true}, 10, []byte("plaintext-unbound"), later), want: envelope.ErrInvalid},
		{data: sealWith(secretC, target, 11, []byte("plaintext-unknown"), later), want: envelope.ErrUnknownKey},
		{data: sealVersion(1, secretA, target, 12, []byte("plaintext-v1"), later), plaintext: []byte("plaintext-v1")},
		{data: sealVersion(1, secretB, target, 13, []byte("plaintext-v1-previous"), later), plaintext: []byte("plaintext-v1-previous")},
		{data: sealVersion(1, secretA, other, 14, []byte("plaintext-v1-other"), later), want: envelope.ErrInvalid},
		{data: sealVersion(1, secretA, target, 15, []byte("plaintext-v1-expired"), earlier), want: envelope.ErrExpired},
	} {
		k.add(f, s)
		if i < 4 || i == 5 {
			addMutations(f, s.data)
		}
	}
	// A record sealed by the package itself opens too: the seeds and the
	// package agree on the format.
	fresh, err := sealer.Seal(target, []byte("plaintext-fresh"), later)
	if err != nil {
		f.Fatal(err)
	}
	if pt, err := sealer.Open(target, fresh); err != nil || string(pt) != "plaintext-fresh" {
		f.Fatalf("the package's own record does not open: %v", err)
	}
	f.Add([]byte{})
	f.Add([]byte{0x01})
	f.Add(make([]byte, envelope.Overhead))
	f.Add(append([]byte{0x01}, make([]byte, 1<<20)...)) // a huge record of zeros
	f.Add(bytes.Repeat([]byte{0xFF}, 64))

	ids := map[keyschedule.KeyID]bool{secretA.KeyID(): true, secretB.KeyID(): true}
	f.Fuzz(func(t *testing.T, data []byte) {
		plaintext, err := sealer.Open(target, data)
		checkErrorText(t, err)
		// AppendOpen, which opens in its own buffer, agrees with Open.
		appended, _, aerr := sealer.AppendOpen([]byte("dst:"), target, data)
		if aerr != err || string(appended) != "dst:"+string(plaintext) {
			t.Fatalf("AppendOpen = %v, Open = %v", aerr, err)
		}
		if s, ok := k[string(data)]; ok {
			checkKnown(t, s, plaintext, err)
			return
		}
		if err == nil || errors.Is(err, envelope.ErrExpired) {
			t.Fatalf("bytes that were never sealed gave %v", err)
		}
		checkRejection(t, err)
		h, herr := envelope.ParseHeader(data)
		if errors.Is(err, envelope.ErrUnknownKey) && (herr != nil || ids[h.KeyID]) {
			t.Fatalf("unknown key for a header that names a configured key or does not parse")
		}
		if herr != nil && !errors.Is(err, envelope.ErrInvalid) {
			t.Fatalf("a header that does not parse gave %v", err)
		}
	})
}

// FuzzParseHeader reads arbitrary bytes as a record header: it never
// panics, and what it returns is exactly the bytes of the format.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{})
	f.Add(sealWith(secretA, target, 1, []byte("plaintext-x"), later))
	f.Add(sealWith(secretA, target, 1, nil, time.UnixMilli(-1)))
	f.Add(make([]byte, envelope.Overhead-1))
	f.Add(append([]byte{0x02}, make([]byte, 64)...))
	f.Add(append([]byte{0x03}, make([]byte, 64)...))
	f.Add(append([]byte{0x01}, bytes.Repeat([]byte{0xFF}, 64)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := envelope.ParseHeader(data)
		wellFormed := len(data) >= 41 && (data[0] == 0x01 || data[0] == 0x02)
		if err != nil {
			if wellFormed {
				t.Fatalf("a well-formed header gave %v", err)
			}
			if !errors.Is(err, envelope.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			return
		}
		if !wellFormed {
			t.Fatalf("a malformed header parsed")
		}
		if !bytes.Equal(h.KeyID[:], data[1:5]) {
			t.Fatalf("key ID %s, bytes %x", h.KeyID, data[1:5])
		}
		if ms := int64(binary.BigEndian.Uint64(data[5:13])); h.Expiry.UnixMilli() != ms {
			t.Fatalf("expiry %d ms, bytes say %d", h.Expiry.UnixMilli(), ms)
		}
	})
}

// storedSeeds returns the stored records the stored-record targets start
// from, with their outcome under target.
func storedSeeds() []seed {
	return []seed{
		{data: storedWith(secretA, secretA, target, target, 1, []byte("plaintext-a"), later), plaintext: []byte("plaintext-a"), authentic: true},
		{data: storedWith(secretB, secretB, target, target, 3, []byte("plaintext-b"), later), plaintext: []byte("plaintext-b"), authentic: true},
		{data: storedWith(secretA, secretA, target, target, 5, nil, later), plaintext: nil, authentic: true},
		{data: storedWith(secretA, secretA, target, target, 7, []byte("plaintext-expired"), earlier), want: envelope.ErrExpired, authentic: true, expired: true},
		// The box names another slot: a record moved by someone who cannot seal.
		{data: storedWith(secretA, secretA, other, target, 9, []byte("plaintext-moved"), later), want: envelope.ErrInvalid},
		{data: storedWith(secretA, secretA, other, other, 11, []byte("plaintext-other"), later), want: envelope.ErrInvalid},
		// The payload's key is unknown; the box's is not.
		{data: storedWith(secretA, secretC, target, target, 13, []byte("plaintext-c"), later), want: envelope.ErrUnknownKey},
		// The box's key is unknown; the payload's is not.
		{data: storedWith(secretC, secretA, target, target, 15, []byte("plaintext-c-box"), later), want: envelope.ErrUnknownKey},
	}
}

// splitStored splits a stored record as SECURITY.md describes it, for an
// independent check of ring.RecordHeader.
func splitStored(data []byte) (box, payload []byte, ok bool) {
	if len(data) < 3 || data[0] != 0xE1 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(data[1:3]))
	rest := data[3:]
	if n < envelope.Overhead || len(rest) < n+envelope.Overhead {
		return nil, nil, false
	}
	return rest[:n], rest[n:], true
}

func addStoredSeeds(f *testing.F, k known) {
	for i, s := range storedSeeds() {
		k.add(f, s)
		if i < 2 {
			addMutations(f, s.data)
			// The box length field: zero, short, long, huge.
			for _, n := range []uint16{0, envelope.Overhead - 1, envelope.Overhead, 0xFFFF} {
				d := bytes.Clone(s.data)
				binary.BigEndian.PutUint16(d[1:3], n)
				f.Add(d)
			}
			box := int(binary.BigEndian.Uint16(s.data[1:3]))
			f.Add(bytes.Clone(s.data[:3+box]))                        // no payload
			f.Add(append(bytes.Clone(s.data[:3+box]), s.data[3:]...)) // the box twice
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xE1})
	f.Add([]byte{0xE1, 0, 0})
	f.Add(append([]byte{0xE0, 0, 41}, make([]byte, 100)...))
	f.Add(append([]byte{0xE1, 0xFF, 0xFF}, make([]byte, 1<<16+64)...))
	f.Add([]byte("a one-shot marker, not a record"))
}

// FuzzOpenRecord opens arbitrary bytes as a stored record and reads its
// header without a key. Neither may panic, and RecordHeader agrees with the
// documented layout. OpenRecord succeeds only when both parts are
// authentic (a payload sealed for target, a box naming target) and gives
// the payload's plaintext; it reports expired only when both parts are
// authentic and expired. Anything else is invalid
// or unknown key.
//
// The parts are checked one by one, not the record as a whole: the box of
// one authentic record with the payload of another for the same binding
// opens, as it should, since both were sealed for that binding.
func FuzzOpenRecord(f *testing.F) {
	keyring, err := ring.New([]byte(rawSecretA), [][]byte{[]byte(rawSecretB)}, envelope.WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	k := known{}
	addStoredSeeds(f, k)
	fresh, err := keyring.SealRecord(target, []byte("plaintext-fresh"), later)
	if err != nil {
		f.Fatal(err)
	}
	if pt, err := keyring.OpenRecord(target, fresh); err != nil || string(pt) != "plaintext-fresh" {
		f.Fatalf("the package's own record does not open: %v", err)
	}
	// The authentic parts of the seeds, under configured secrets.
	payloads := map[string]seed{} // sealed for target: want nil or ErrExpired
	boxes := map[string]bool{}    // naming target: expired?
	for _, s := range storedSeeds() {
		box, payload, _ := splitStored(s.data)
		if s.authentic {
			boxes[string(box)] = s.expired
			payloads[string(payload)] = s
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		h, herr := ring.RecordHeader(data)
		box, payload, ok := splitStored(data)
		if ok {
			want, werr := envelope.ParseHeader(payload)
			if (herr == nil) != (werr == nil) || (herr == nil && (h.KeyID != want.KeyID || !h.Expiry.Equal(want.Expiry))) {
				t.Fatalf("RecordHeader = %v, %v; the layout says %v, %v", h, herr, want, werr)
			}
		} else if herr == nil {
			t.Fatalf("RecordHeader parsed a value that is not a stored record")
		}

		plaintext, err := keyring.OpenRecord(target, data)
		checkErrorText(t, err)
		if s, ok := k[string(data)]; ok {
			checkKnown(t, s, plaintext, err)
			return
		}
		p, payloadOK := payloads[string(payload)]
		boxExpired, boxOK := boxes[string(box)]
		switch {
		case err == nil:
			if !ok || !payloadOK || p.expired || !boxOK || boxExpired || !bytes.Equal(plaintext, p.plaintext) {
				t.Fatalf("a record that is not authentic opened")
			}
		case errors.Is(err, envelope.ErrExpired):
			if !ok || !payloadOK || !p.expired || !boxOK || !boxExpired {
				t.Fatalf("expired for a record whose parts are not authentic and expired")
			}
		default:
			checkRejection(t, err)
		}
	})
}

// FuzzRewrap stores arbitrary bytes where a record for target sealed under
// the previous secret would be, and runs a rewrap and an inspection of the
// store. Neither may panic or fail; only an authentic record is rewrapped,
// and a rewrapped record opens under the primary secret alone.
func FuzzRewrap(f *testing.F) {
	keyring, err := ring.New([]byte(rawSecretA), [][]byte{[]byte(rawSecretB)}, envelope.WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	primaryOnly, err := ring.New([]byte(rawSecretA), nil, envelope.WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	keys := keyring.StoreKeys(target)
	k := known{}
	addStoredSeeds(f, k)
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, data []byte) {
		s := memory.New(&memory.Options{Clock: fixedClock, SweepInterval: -1})
		defer s.Close()
		if data == nil {
			data = []byte{}
		}
		if err := s.Put(ctx, keys[1], data, later); err != nil {
			t.Fatal(err)
		}
		r, err := ring.Inspect(ctx, s, fuzzNow)
		if err != nil || r.Entries != 1 {
			t.Fatalf("inspect: %+v, %v", r, err)
		}
		p, err := keyring.Rewrap(ctx, s, ring.RewrapOptions{})
		if err != nil {
			t.Fatalf("rewrap failed on one entry: %v", err)
		}
		if p.Scanned != 1 || p.Rewrapped+p.Current+p.Changed+p.Skipped+p.Failed > 1 || p.Cursor != "" {
			t.Fatalf("progress %+v for one entry", p)
		}
		seed, authentic := k[string(data)]
		authentic = authentic && seed.want == nil
		if p.Rewrapped+p.Current > 0 && !authentic {
			t.Fatalf("a value that is no authentic record was rewrapped: %+v", p)
		}
		if !authentic {
			return
		}
		if p.Rewrapped != 1 {
			t.Fatalf("an authentic record was not rewrapped: %+v", p)
		}
		got, err := primaryOnly.Lookup(ctx, s, target)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := primaryOnly.OpenRecord(target, got)
		if err != nil || !bytes.Equal(pt, seed.plaintext) {
			t.Fatalf("the rewrapped record gives %q, %v", pt, err)
		}
		if _, err := s.Get(ctx, keys[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the old copy is still there: %v", err)
		}
	})
}

// FuzzParseKeyID parses arbitrary text as a key ID: only 8 lowercase hex
// characters parse, and they print back as given.
func FuzzParseKeyID(f *testing.F) {
	for _, s := range []string{"", "00000000", "deadbeef", "DEADBEEF", "dead beef", "deadbee", "deadbeef0",
		"g0000000", "0x000000", "+1234567", "ｄｅａｄ", secretA.KeyID().String()} {
		f.Add(s)
	}
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	f.Fuzz(func(t *testing.T, s string) {
		id, err := keyschedule.ParseKeyID(s)
		if hex8.MatchString(s) {
			if err != nil || id.String() != s {
				t.Fatalf("ParseKeyID(%q) = %s, %v", s, id, err)
			}
			return
		}
		if !errors.Is(err, keyschedule.ErrInvalidKeyID) {
			t.Fatalf("ParseKeyID(%q) = %s, %v; want ErrInvalidKeyID", s, id, err)
		}
		// Every key ID prints as text that parses back to it.
		var raw keyschedule.KeyID
		copy(raw[:], s)
		back, err := keyschedule.ParseKeyID(raw.String())
		if err != nil || back != raw {
			t.Fatalf("%x does not round-trip: %s, %v", raw[:], back, err)
		}
	})
}

// FuzzLoadPrevious loads the keyring from arbitrary values of
// MCP_ELICITATION_SECRET and the comma-separated
// MCP_ELICITATION_SECRET_PREVIOUS. It never panics; it succeeds exactly
// when every secret is at least 32 bytes and no two share a key ID, with
// the key IDs in the order given; otherwise the error is the first problem
// in the documented order, and its text never carries a secret.
func FuzzLoadPrevious(f *testing.F) {
	a, b, c := rawSecretA, rawSecretB, rawSecretC
	for _, s := range [][2]string{
		{a, ""}, {a, b}, {a, b + "," + c}, {a, b + ","}, {a, "," + b}, {a, ","}, {a, a}, {a, b + "," + b},
		{a, "short"}, {a, b + ",short"}, {"", b}, {"short", b}, {a, b + ", " + c}, {a, " " + a},
		{a, strings.Repeat(b+",", 20) + c}, {a, "\x00" + b}, {"ü" + a, b},
	} {
		f.Add(s[0], s[1])
	}
	// The one error text for each problem: variable and entry, or key ID.
	shape := regexp.MustCompile(`^keyring: (` +
		`MCP_ELICITATION_SECRET is not set|` +
		`MCP_ELICITATION_SECRET: keyschedule: secret is shorter than 32 bytes|` +
		`MCP_ELICITATION_SECRET_PREVIOUS, entry [1-9][0-9]*: (empty secret|keyschedule: secret is shorter than 32 bytes|leading or trailing whitespace \(separate secrets with commas only\))|` +
		`envelope: two secrets have the same key ID \([0-9a-f]{8}\))$`)

	f.Fuzz(func(t *testing.T, primary, previous string) {
		getenv := func(name string) string {
			switch name {
			case ring.EnvSecret:
				return primary
			case ring.EnvPrevious:
				return previous
			}
			return ""
		}
		k, err := ring.Load(ring.LoadOptions{Getenv: getenv})

		// What Load must do, worked out independently.
		var entries []string
		if previous != "" {
			entries = strings.Split(previous, ",")
		}
		want := func() string {
			if primary == "" {
				return "MCP_ELICITATION_SECRET is not set"
			}
			for i, e := range entries {
				if e == "" {
					return fmt.Sprintf("MCP_ELICITATION_SECRET_PREVIOUS, entry %d: empty secret", i+1)
				}
				if strings.TrimSpace(e) != e {
					return fmt.Sprintf("MCP_ELICITATION_SECRET_PREVIOUS, entry %d: leading or trailing whitespace (separate secrets with commas only)", i+1)
				}
			}
			if len(primary) < 32 {
				return "MCP_ELICITATION_SECRET: keyschedule: secret is shorter than 32 bytes"
			}
			for i, e := range entries {
				if len(e) < 32 {
					return fmt.Sprintf("MCP_ELICITATION_SECRET_PREVIOUS, entry %d: keyschedule: secret is shorter than 32 bytes", i+1)
				}
			}
			seen := map[keyschedule.KeyID]bool{mustSecret(primary).KeyID(): true}
			for _, e := range entries {
				id := mustSecret(e).KeyID()
				if seen[id] {
					return fmt.Sprintf("envelope: two secrets have the same key ID (%s)", id)
				}
				seen[id] = true
			}
			return ""
		}()

		if want == "" {
			if err != nil {
				t.Fatalf("Load refused valid secrets: %v", err)
			}
			ids := k.KeyIDs()
			if len(ids) != 1+len(entries) || ids[0] != mustSecret(primary).KeyID() {
				t.Fatalf("key IDs %v for %d previous secrets", ids, len(entries))
			}
			for i, e := range entries {
				if ids[i+1] != mustSecret(e).KeyID() {
					t.Fatalf("key ID %d is %s, want that of entry %d", i+1, ids[i+1], i+1)
				}
			}
			return
		}
		if err == nil {
			t.Fatalf("Load accepted what must fail with %q", want)
		}
		if !shape.MatchString(err.Error()) {
			t.Fatalf("error %q is not of the documented shape (and may carry a secret)", err)
		}
		if err.Error() != "keyring: "+want {
			t.Fatalf("error %q, want %q", err, "keyring: "+want)
		}
		var sentinel error
		switch {
		case strings.Contains(want, "not set"):
			sentinel = ring.ErrNoSecret
		case strings.Contains(want, "shorter"):
			sentinel = ring.ErrShortSecret
		case strings.Contains(want, "key ID"):
			sentinel = ring.ErrDuplicateKeyID
		}
		if sentinel != nil && !errors.Is(err, sentinel) {
			t.Fatalf("error %q is not %v", err, sentinel)
		}
	})
}

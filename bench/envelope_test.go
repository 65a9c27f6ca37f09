package bench

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"strconv"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

// plaintextSize is the size of every plaintext the envelope benchmarks seal.
const plaintextSize = 512

// BenchmarkEnvelope seals and opens 512 bytes: with stdlib AES-256-GCM and a
// ready key (raw-gcm, the baseline), through the envelope with the session
// key cached (warm), and through the envelope with a new session each time,
// so that HKDF and the AES key setup run every time (cold). raw-gcm-reuse,
// for information, is raw-gcm writing into buffers it reuses, which the
// envelope's API, handing its results over, cannot do.
func BenchmarkEnvelope(b *testing.B) {
	b.Run("raw-gcm", benchRawGCM)
	b.Run("warm", benchWarm)
	b.Run("cold", benchCold)
	b.Run("raw-gcm-reuse", benchRawGCMReuse)
}

func randomBytes(n int) []byte {
	p := make([]byte, n)
	rand.Read(p)
	return p
}

// benchRawGCM is the baseline: the primitive the envelope uses
// (cipher.NewGCMWithRandomNonce: AES-256-GCM with a fresh random nonce per
// seal) with a key set up once and no additional data. Like the envelope's
// Seal and Open, and like the stdlib's own idiom (Seal(nil, ...),
// Open(nil, ...)), it returns a fresh sealed slice and a fresh plaintext
// each time: both sides produce the same result, memory the caller owns.
func benchRawGCM(b *testing.B) {
	aead := rawAEAD(b)
	pt := randomBytes(plaintextSize)
	b.SetBytes(plaintextSize)
	b.ReportAllocs()
	for b.Loop() {
		sealed := aead.Seal(nil, nil, pt, nil)
		if _, err := aead.Open(nil, nil, sealed, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRawGCMReuse(b *testing.B) {
	aead := rawAEAD(b)
	pt := randomBytes(plaintextSize)
	sealed := make([]byte, 0, plaintextSize+aead.Overhead())
	opened := make([]byte, 0, plaintextSize)
	b.SetBytes(plaintextSize)
	b.ReportAllocs()
	for b.Loop() {
		sealed = aead.Seal(sealed[:0], nil, pt, nil)
		var err error
		opened, err = aead.Open(opened[:0], nil, sealed, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// rawAEAD is the primitive the envelope uses: AES-256-GCM with a fresh
// random nonce per seal (cipher.NewGCMWithRandomNonce), key set up once.
func rawAEAD(b testing.TB) cipher.AEAD {
	block, err := aes.NewCipher(randomBytes(32))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		b.Fatal(err)
	}
	return aead
}

func newSealer(b *testing.B) *envelope.Sealer {
	secret, err := keyschedule.New(randomBytes(32))
	if err != nil {
		b.Fatal(err)
	}
	s, err := envelope.New(secret, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

var benchBinding = envelope.Binding{
	Purpose:   "pending",
	Subject:   "user-0123456789",
	SessionID: "mcp-session-7f3a9c2e4b1d",
	RecordID:  "elicitation-42",
}

// benchWarm seals and opens through the envelope under one binding: the
// session key is derived once and cached.
func benchWarm(b *testing.B) {
	s := newSealer(b)
	pt := randomBytes(plaintextSize)
	expiry := time.Now().Add(time.Hour)
	if _, err := s.Seal(benchBinding, pt, expiry); err != nil { // warm the cache
		b.Fatal(err)
	}
	b.SetBytes(plaintextSize)
	b.ReportAllocs()
	for b.Loop() {
		sealed, err := s.Seal(benchBinding, pt, expiry)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(benchBinding, sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCold seals and opens each time under a session never seen before:
// every iteration derives a key with HKDF, sets up AES-GCM and caches it
// (evicting the oldest once the cache is full). The session IDs are made
// before the timer runs.
func benchCold(b *testing.B) {
	s := newSealer(b)
	pt := randomBytes(plaintextSize)
	expiry := time.Now().Add(time.Hour)
	b.SetBytes(plaintextSize)
	b.ReportAllocs()
	ids := make([]string, 0, 1024)
	bind := benchBinding
	n, made := 0, 0
	for b.Loop() {
		if n == len(ids) {
			b.StopTimer()
			ids = ids[:0]
			for range cap(ids) {
				ids = append(ids, "mcp-session-"+strconv.Itoa(made))
				made++
			}
			n = 0
			b.StartTimer()
		}
		bind.SessionID = ids[n]
		n++
		sealed, err := s.Seal(bind, pt, expiry)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(bind, sealed); err != nil {
			b.Fatal(err)
		}
	}
}

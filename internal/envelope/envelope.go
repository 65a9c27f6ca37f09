// Package envelope seals records with AES-256-GCM under keys from the
// elicitvault key schedule.
//
// A sealed record is
//
//	version (1 byte) || key ID (4) || expiry (8, big-endian Unix ms) ||
//	nonce (12) || ciphertext || tag (16)
//
// 41 bytes of overhead. The key is the purpose key bound to the record's
// subject and session (or the bare purpose key for an unbound binding), so
// a record opens only under the binding it was sealed for. The additional
// data authenticates the 13-byte header, so the expiry cannot be changed
// without detection, and the record ID, so a record cannot be moved to
// another slot of its session:
//
//	version 2 (Seal):  header || record ID
//	version 1 (opened): header || lp(purpose) || lp(subject) || lp(session ID) || lp(record ID)
//
// where lp is a 4-byte big-endian length and the bytes. Version 1 repeated
// in the additional data what the key already binds; version 2 authenticates
// the same binding with fewer bytes to hash. Records of version 1 still
// open, and Reseal writes them as version 2.
package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

const (
	// Version is the first byte of every record Seal writes.
	Version = 0x02
	// version1 is the first byte of the records of releases before v0.2,
	// which Open still opens (see the package documentation).
	version1 = 0x01
	// HeaderSize is the size of the version, key ID and expiry.
	HeaderSize = 1 + 4 + 8
	// Overhead is the number of bytes a sealed record adds to its plaintext.
	Overhead = HeaderSize + 12 + 16
)

var (
	// ErrInvalid is returned for any record that is malformed, was tampered
	// with, or is opened under another binding. It is deliberately one error.
	ErrInvalid = errors.New("envelope: invalid sealed record")
	// ErrExpired is returned for an authentic record past its expiry.
	ErrExpired = errors.New("envelope: sealed record expired")
	// ErrUnknownKey is returned for a record sealed under a secret that is
	// not configured.
	ErrUnknownKey = errors.New("envelope: unknown key ID")
	// ErrDuplicateKeyID is returned by New when two secrets share a key ID.
	ErrDuplicateKeyID = errors.New("envelope: two secrets have the same key ID")
	// ErrBinding is returned by Seal and Open for a binding that breaks the
	// rules of Binding (an invalid purpose, a session key without session).
	ErrBinding = errors.New("envelope: invalid binding")
)

// Binding names the one slot a record may be opened in.
//
// A record's key is bound to (Purpose, Subject, SessionID), so SessionID
// must not be empty. An Unbound binding uses the bare purpose key, shared by
// every record of that purpose: it is for tokens and other records that
// carry their binding inside the ciphertext, and requires Subject and
// SessionID to be empty.
type Binding struct {
	Purpose   string
	Subject   string
	SessionID string
	RecordID  string
	Unbound   bool
}

func (b *Binding) check() error {
	if !keyschedule.ValidPurpose(b.Purpose) {
		return ErrBinding
	}
	if b.Unbound != (b.SessionID == "") || (b.Unbound && b.Subject != "") {
		return ErrBinding
	}
	return nil
}

// appendInfo appends the key schedule's info string for b.
func (b *Binding) appendInfo(dst []byte) ([]byte, error) {
	if b.Unbound {
		return keyschedule.AppendInfo(dst, b.Purpose)
	}
	return keyschedule.AppendInfo(dst, b.Purpose, b.Subject, b.SessionID)
}

// aadSizeV1 returns the size of the AAD appendAADV1 writes.
func (b *Binding) aadSizeV1() int {
	return HeaderSize + 4*4 + len(b.Purpose) + len(b.Subject) + len(b.SessionID) + len(b.RecordID)
}

// appendAADV1 appends the additional data of a version 1 record:
// header || lp(purpose) || lp(subject) || lp(session) || lp(record), where lp
// is keyschedule.AppendField's encoding: a 4-byte big-endian length and the
// bytes.
func (b *Binding) appendAADV1(dst, header []byte) ([]byte, error) {
	const max = math.MaxUint32
	if uint64(len(b.Purpose)) > max || uint64(len(b.Subject)) > max ||
		uint64(len(b.SessionID)) > max || uint64(len(b.RecordID)) > max {
		return dst, ErrBinding
	}
	dst = slices.Grow(dst, b.aadSizeV1())
	dst = append(dst, header...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Purpose)))
	dst = append(dst, b.Purpose...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Subject)))
	dst = append(dst, b.Subject...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.SessionID)))
	dst = append(dst, b.SessionID...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.RecordID)))
	dst = append(dst, b.RecordID...)
	return dst, nil
}

// Header is the unauthenticated header of a sealed record. It can be read
// without any key, for rewrap and inspection; nothing in it is trustworthy
// until Open has verified the record.
type Header struct {
	Version byte // Version, or 1 for a record of a release before v0.2
	KeyID   keyschedule.KeyID
	Expiry  time.Time
}

// ParseHeader reads the header of a sealed record without a key.
func ParseHeader(sealed []byte) (Header, error) {
	id, expiry, ok := parseHeader(sealed)
	if !ok {
		return Header{}, ErrInvalid
	}
	return Header{Version: sealed[0], KeyID: id, Expiry: time.UnixMilli(expiry)}, nil
}

// parseHeader returns the key ID and the expiry in Unix milliseconds.
func parseHeader(sealed []byte) (id keyschedule.KeyID, expiry int64, ok bool) {
	if len(sealed) < Overhead || (sealed[0] != Version && sealed[0] != version1) {
		return id, 0, false
	}
	copy(id[:], sealed[1:5])
	return id, int64(binary.BigEndian.Uint64(sealed[5:13])), true
}

// Sealer seals under its primary secret and opens under any of its secrets.
// It is safe for concurrent use.
type Sealer struct {
	primary *keyschedule.Secret
	secrets map[keyschedule.KeyID]*keyschedule.Secret
	cache   *aeadCache
	now     func() time.Time
	clock   *wallClock // the default clock, nil after WithClock
}

// Option configures a Sealer.
type Option func(*Sealer)

// WithCacheSize bounds the number of derived keys held in memory
// (default 4096). Each entry holds one expanded AES-256-GCM key and the
// binding fields it is for (purpose, subject, session ID).
func WithCacheSize(n int) Option {
	return func(s *Sealer) { s.cache = newAEADCache(n) }
}

// WithClock replaces the wall clock (time.Now, read cheaply), for tests.
func WithClock(now func() time.Time) Option {
	return func(s *Sealer) { s.now, s.clock = now, nil }
}

// DefaultCacheSize is the number of derived keys a Sealer caches by default.
const DefaultCacheSize = 4096

// New returns a Sealer that seals under primary and opens under primary and
// previous, looked up by the key ID in each record's header.
func New(primary *keyschedule.Secret, previous []*keyschedule.Secret, opts ...Option) (*Sealer, error) {
	if primary == nil {
		return nil, errors.New("envelope: no primary secret")
	}
	s := &Sealer{
		primary: primary,
		secrets: map[keyschedule.KeyID]*keyschedule.Secret{primary.KeyID(): primary},
	}
	s.clock = new(wallClock)
	s.now = s.clock.now
	for _, p := range previous {
		if _, dup := s.secrets[p.KeyID()]; dup {
			return nil, fmt.Errorf("%w (%s)", ErrDuplicateKeyID, p.KeyID())
		}
		s.secrets[p.KeyID()] = p
	}
	for _, o := range opts {
		o(s)
	}
	if s.cache == nil {
		s.cache = newAEADCache(DefaultCacheSize)
	}
	return s, nil
}

// PrimaryKeyID returns the key ID new records are sealed under.
func (s *Sealer) PrimaryKeyID() keyschedule.KeyID { return s.primary.KeyID() }

// Has reports whether the Sealer holds the secret with key ID id.
func (s *Sealer) Has(id keyschedule.KeyID) bool { _, ok := s.secrets[id]; return ok }

// Now returns the Sealer's current time.
func (s *Sealer) Now() time.Time { return s.now() }

// WithClock returns a Sealer like s, with its secrets and its key cache,
// that reads the time from now.
func (s *Sealer) WithClock(now func() time.Time) *Sealer {
	c := *s
	c.now, c.clock = now, nil
	return &c
}

// Seal seals plaintext for binding b, to be opened until expiry.
func (s *Sealer) Seal(b Binding, plaintext []byte, expiry time.Time) ([]byte, error) {
	return s.seal(s.primary, &b, plaintext, expiry)
}

func (s *Sealer) seal(secret *keyschedule.Secret, b *Binding, plaintext []byte, expiry time.Time) ([]byte, error) {
	e, header, err := s.sealingEntry(secret, b, expiry)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, Overhead+len(plaintext)), header[:]...)
	aad, pooled, err := e.buildAAD(b, header[:])
	if err != nil {
		return nil, err
	}
	out = e.aead.Seal(out, nil, plaintext, aad)
	e.releaseAAD(aad, pooled)
	return out, nil
}

// sealingEntry returns the cache entry that seals for b under secret, and
// the header of a record that expires at expiry.
func (s *Sealer) sealingEntry(secret *keyschedule.Secret, b *Binding, expiry time.Time) (*cacheEntry, [HeaderSize]byte, error) {
	var header [HeaderSize]byte
	if expiry.IsZero() {
		return nil, header, errors.New("envelope: seal without expiry")
	}
	e, err := s.entry(secret, b)
	if err != nil {
		return nil, header, err
	}
	header[0] = Version
	id := secret.KeyID()
	copy(header[1:5], id[:])
	binary.BigEndian.PutUint64(header[5:13], uint64(expiry.UnixMilli()))
	return e, header, nil
}

// AppendSeal appends to dst the record Seal returns. It copies plaintext
// before it writes to dst, so dst may be plaintext[:0]. Neither buffer is
// retained, and none is allocated when dst has room: for callers that seal
// small records on a hot path.
func (s *Sealer) AppendSeal(dst []byte, b Binding, plaintext []byte, expiry time.Time) ([]byte, error) {
	e, header, err := s.sealingEntry(s.primary, &b, expiry)
	if err != nil {
		return dst, err
	}
	aad, pooled, err := e.buildAAD(&b, header[:])
	if err != nil {
		return dst, err
	}
	// The record is sealed in place in the AAD's buffer, after the AAD.
	aad, work := withRoom(aad, 12+len(plaintext)+16)
	work = append(work, plaintext...)
	sealed := e.aead.Seal(work[:0], nil, work, aad)
	dst = append(append(dst, header[:]...), sealed...)
	e.releaseAAD(aad, pooled)
	return dst, nil
}

// AppendOpen is OpenHeader that appends the plaintext to dst. sealed is
// not retained and may overlap dst; no buffer is allocated when dst has
// room. On error dst is returned unchanged.
func (s *Sealer) AppendOpen(dst []byte, b Binding, sealed []byte) ([]byte, Header, error) {
	e, id, expiry, err := s.openingEntry(&b, sealed)
	if err != nil {
		return dst, Header{}, err
	}
	version := sealed[0] // before dst, which may overlap sealed, is written
	aad, pooled, err := e.buildAAD(&b, sealed[:HeaderSize])
	if err != nil {
		return dst, Header{}, err
	}
	// The record is opened in place in the AAD's buffer, after the AAD.
	aad, work := withRoom(aad, len(sealed)-HeaderSize)
	work = append(work, sealed[HeaderSize:]...)
	pt, err := e.aead.Open(work[:0], nil, work, aad)
	switch {
	case err != nil:
		err = ErrInvalid
	case s.nowMilli() >= expiry:
		err = ErrExpired
	default:
		dst = append(dst, pt...)
	}
	clear(work)
	e.releaseAAD(aad, pooled)
	if err != nil {
		return dst, Header{}, err
	}
	return dst, Header{Version: version, KeyID: id, Expiry: time.UnixMilli(expiry)}, nil
}

// withRoom returns aad, moved to a larger buffer if need be, and the empty
// slice that follows it, with room for n bytes.
func withRoom(aad []byte, n int) (moved, room []byte) {
	aad = slices.Grow(aad, n)
	return aad, aad[len(aad):]
}

// aadBuffers holds buffers for AADs, for when a cache entry's own buffer is
// in use. A buffer passed to an AEAD, an interface, escapes to the heap:
// without them every Seal and Open would allocate one.
var aadBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Open verifies a record sealed for binding b and returns its plaintext.
// It checks, in order: length and version, that the key ID is known
// (ErrUnknownKey), the tag (ErrInvalid), then the expiry (ErrExpired).
func (s *Sealer) Open(b Binding, sealed []byte) ([]byte, error) {
	pt, _, _, err := s.open(&b, sealed)
	return pt, err
}

// OpenHeader is Open that also returns the record's verified header.
func (s *Sealer) OpenHeader(b Binding, sealed []byte) ([]byte, Header, error) {
	pt, id, expiry, err := s.open(&b, sealed)
	if err != nil {
		return nil, Header{}, err
	}
	return pt, Header{Version: sealed[0], KeyID: id, Expiry: time.UnixMilli(expiry)}, nil
}

func (s *Sealer) open(b *Binding, sealed []byte) (pt []byte, id keyschedule.KeyID, expiry int64, err error) {
	e, id, expiry, err := s.openingEntry(b, sealed)
	if err != nil {
		return nil, id, 0, err
	}
	aad, pooled, err := e.buildAAD(b, sealed[:HeaderSize])
	if err != nil {
		return nil, id, 0, err
	}
	pt, err = e.aead.Open(nil, nil, sealed[HeaderSize:], aad)
	e.releaseAAD(aad, pooled)
	if err != nil {
		return nil, id, 0, ErrInvalid
	}
	if s.nowMilli() >= expiry {
		clear(pt)
		return nil, id, 0, ErrExpired
	}
	return pt, id, expiry, nil
}

// openingEntry checks sealed's length and version and returns the cache
// entry that opens it for b, its key ID and its expiry (Unix ms, not yet
// authenticated).
func (s *Sealer) openingEntry(b *Binding, sealed []byte) (e *cacheEntry, id keyschedule.KeyID, expiry int64, err error) {
	id, expiry, ok := parseHeader(sealed)
	if !ok {
		return nil, id, 0, ErrInvalid
	}
	secret := s.primary
	if id != secret.KeyID() {
		if secret, ok = s.secrets[id]; !ok {
			return nil, id, 0, ErrUnknownKey
		}
	}
	e, err = s.entry(secret, b)
	return e, id, expiry, err
}

// nowMilli returns the current time in Unix milliseconds: the unit of the
// expiry, so that now >= expiry is exactly !now.Before(expiry).
func (s *Sealer) nowMilli() int64 {
	if s.clock != nil {
		return s.clock.nowMilli()
	}
	return s.now().UnixMilli()
}

// Reseal opens a record sealed for b under any known secret and seals its
// plaintext again under the primary secret, keeping binding and expiry.
// Expired records are not resealed.
func (s *Sealer) Reseal(b Binding, sealed []byte) ([]byte, error) {
	pt, _, expiry, err := s.open(&b, sealed)
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	return s.seal(s.primary, &b, pt, time.UnixMilli(expiry))
}

// entry returns the cache entry of (secret, binding's key), deriving the
// key on a miss. A binding that breaks the rules is never in the cache, so
// b is checked on a miss only.
func (s *Sealer) entry(secret *keyschedule.Secret, b *Binding) (*cacheEntry, error) {
	if e := s.cache.lookup(secret.KeyID(), b); e != nil {
		return e, nil
	}
	return s.derive(secret, b, keyFor(secret.KeyID(), b))
}

// derive derives the key for b, sets up its AEAD and caches it. It is a
// function of its own so that the hit path does not pay for its frame.
func (s *Sealer) derive(secret *keyschedule.Secret, b *Binding, k cacheKey) (*cacheEntry, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	var buf [192]byte
	info, err := b.appendInfo(buf[:0])
	if err != nil {
		return nil, ErrBinding
	}
	key := secret.Expand(info)
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	a, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	return s.cache.put(k, a), nil
}

// Package keyschedule implements elicitvault's key schedule.
//
// A secret (the bytes of MCP_ELICITATION_SECRET, at least 32 of them) is
// turned into a pseudorandom key once:
//
//	prk = HKDF-Extract(SHA-256, salt = "elicitvault/v1", ikm = secret)
//
// Every other key is expanded from prk:
//
//	key ID      = HKDF-Expand(prk, "elicitvault/v1 key-id", 4)
//	purpose key = HKDF-Expand(prk, info, 32)
//	info        = "elicitvault/v1 " || purpose || field_1 || ... || field_n
//
// where each binding field is written as a 4-byte big-endian length followed
// by its bytes. Keys bound to a session take two fields, the subject and
// then the session ID; unbound keys (token keys, the index key) take none.
// The length prefixes keep ("ab","c") and ("a","bc") apart.
//
// This schedule is fixed: other languages verify tokens with it. The test
// vectors in testdata/vectors.json pin it.
package keyschedule

import (
	stdhkdf "crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"sync"
)

const (
	// MinSecretSize is the smallest accepted secret, in bytes.
	MinSecretSize = 32
	// KeySize is the size of every purpose key, in bytes.
	KeySize = 32
	// MaxPurposeSize bounds the length of a purpose.
	MaxPurposeSize = 64

	salt        = "elicitvault/v1"
	labelPrefix = "elicitvault/v1 "
)

var (
	// ErrShortSecret is returned for a secret of fewer than MinSecretSize bytes.
	ErrShortSecret = errors.New("keyschedule: secret is shorter than 32 bytes")
	// ErrInvalidPurpose is returned for a purpose outside [a-z0-9/._-]{1,64}.
	ErrInvalidPurpose = errors.New("keyschedule: invalid purpose")
	// ErrInvalidKeyID is returned by ParseKeyID for text that is not 8 lowercase hex digits.
	ErrInvalidKeyID = errors.New("keyschedule: invalid key ID")
)

// KeyID names a secret without revealing it: the first 4 bytes of
// HKDF-Expand(prk, "elicitvault/v1 key-id", 4).
type KeyID [4]byte

// String returns the key ID as 8 lowercase hex characters.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// ParseKeyID parses the 8 lowercase hex characters written by KeyID.String.
func ParseKeyID(s string) (KeyID, error) {
	var id KeyID
	if len(s) != 2*len(id) {
		return id, ErrInvalidKeyID
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return id, ErrInvalidKeyID
		}
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, ErrInvalidKeyID
	}
	return id, nil
}

// Secret is a secret after extraction. It holds the pseudorandom key and
// never the secret itself. A Secret is safe for concurrent use.
type Secret struct {
	prk []byte
	id  KeyID

	// macs holds HMAC-SHA256 instances keyed with prk. HMAC-SHA256 resets
	// to its keyed state without hashing the key again, so a derivation
	// from a pooled instance costs two SHA-256 blocks instead of four.
	macs sync.Pool
}

// New extracts a Secret from the secret's bytes.
func New(secret []byte) (*Secret, error) {
	if len(secret) < MinSecretSize {
		return nil, ErrShortSecret
	}
	prk, err := stdhkdf.Extract(sha256.New, secret, []byte(salt))
	if err != nil {
		return nil, fmt.Errorf("keyschedule: extract: %w", err)
	}
	s := &Secret{prk: prk}
	s.macs.New = func() any { return hmac.New(sha256.New, s.prk) }
	idBytes := s.expand([]byte(labelPrefix+"key-id"), len(s.id))
	copy(s.id[:], idBytes)
	return s, nil
}

// KeyID returns the secret's key ID.
func (s *Secret) KeyID() KeyID { return s.id }

// Key derives the 32-byte key for purpose, bound to the given fields. Pass
// no field for an unbound key and (subject, sessionID) for a session key.
func (s *Secret) Key(purpose string, binding ...string) ([]byte, error) {
	info, err := AppendInfo(nil, purpose, binding...)
	if err != nil {
		return nil, err
	}
	return s.Expand(info), nil
}

// Expand derives the 32-byte key for an info string built by AppendInfo.
func (s *Secret) Expand(info []byte) []byte {
	return s.expand(info, KeySize)
}

// expand is HKDF-Expand(prk, info, n) for n of at most one SHA-256 output,
// where it is the first n bytes of T(1) = HMAC-SHA256(prk, info || 0x01)
// (RFC 5869, section 2.3). The test vectors check it against an
// independent implementation.
func (s *Secret) expand(info []byte, n int) []byte {
	if n > sha256.Size {
		// Not used by the schedule; the general case, for completeness.
		out, err := stdhkdf.Expand(sha256.New, s.prk, string(info), n)
		if err != nil {
			panic("keyschedule: unreachable: " + err.Error())
		}
		return out
	}
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(info)
	mac.Write([]byte{1})
	out := mac.Sum(make([]byte, 0, sha256.Size))
	mac.Reset() // drop the state that depends on info
	s.macs.Put(mac)
	return out[:n]
}

// AppendInfo appends the HKDF info string for purpose and binding to dst.
// A purpose is 1 to 64 bytes of [a-z0-9/._-].
func AppendInfo(dst []byte, purpose string, binding ...string) ([]byte, error) {
	if !ValidPurpose(purpose) {
		return dst, ErrInvalidPurpose
	}
	dst = append(dst, labelPrefix...)
	dst = append(dst, purpose...)
	for _, f := range binding {
		var err error
		if dst, err = AppendField(dst, f); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// AppendField appends f to dst as a 4-byte big-endian length and its bytes,
// the encoding of every binding field in the key schedule and in AADs.
func AppendField(dst []byte, f string) ([]byte, error) {
	if uint64(len(f)) > math.MaxUint32 {
		return dst, errors.New("keyschedule: binding field too long")
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f)))
	return append(dst, f...), nil
}

// ValidPurpose reports whether p is 1 to 64 bytes of [a-z0-9/._-]. The
// restriction keeps a purpose from imitating a length-prefixed field.
func ValidPurpose(p string) bool {
	if len(p) == 0 || len(p) > MaxPurposeSize {
		return false
	}
	for _, c := range []byte(p) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '/', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

package token

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/token/internal/wire"
)

// The compact format is
//
//	"ev1." || base64url-nopad(envelope)
//
// where envelope is sealed for Binding{Purpose: "token/" + kind, Unbound:
// true} with the token's expiry, and its plaintext is the claims:
//
//	token ID        16 bytes
//	lifetime        uvarint, whole seconds: issued-at = expiry − lifetime
//	session ID      string
//	subject         string (empty when none)
//	elicitation ID  string
//	then, for oauth-state:
//	  code verifier string (empty when none)
//	  provider      string (empty when none)
//	and for request-state:
//	  tool name     string
//	  args hash     32 bytes (SHA-256, see HashArgs)
//	  state         uvarint length || bytes
//
// with strings encoded by package token/internal/wire. Nothing may follow.
//
// Version 2, "ev2.", adds the store epoch (package internal/epoch), 8
// bytes after the token ID, and authenticates the version: its envelope
// is sealed with the record ID "ev2" in the binding (the AAD), so that a
// token of one version never opens as the other. Issue writes version 2
// when the Service has a store epoch (WithEpoch), else version 1.
const (
	compactPrefix   = "ev1."
	compactPrefixV2 = "ev2."
	compactV2Record = "ev2"
)

// b64 is strict base64url without padding: the padding bits of the last
// character must be zero. Together with the length check in decodeB64 it
// accepts exactly one text per byte string.
var b64 = base64.RawURLEncoding.Strict()

var (
	urlBinding          = envelope.Binding{Purpose: "token/" + string(URL), Unbound: true}
	oauthStateBinding   = envelope.Binding{Purpose: "token/" + string(OAuthState), Unbound: true}
	requestStateBinding = envelope.Binding{Purpose: "token/" + string(RequestState), Unbound: true}
)

// binding returns the envelope binding of kind k's compact tokens.
func binding(k Kind) envelope.Binding {
	switch k {
	case URL:
		return urlBinding
	case OAuthState:
		return oauthStateBinding
	case RequestState:
		return requestStateBinding
	}
	return envelope.Binding{} // refused by the envelope
}

// bindingV reads kind k's binding for a compact token of version 2 when
// v2 is set.
func bindingV(k Kind, v2 bool) envelope.Binding {
	b := binding(k)
	if v2 {
		b.RecordID = compactV2Record
	}
	return b
}

func (s *Service) issueCompact(c *Claims) (string, error) {
	// Typical tokens are built on the stack and copied once, into the
	// string. The claims are sealed in place.
	var buf [256]byte
	v2 := !c.Epoch.IsZero()
	pt := appendCompactClaims(buf[:0], c)
	sealed, err := s.sealer.AppendSeal(pt[:0], bindingV(c.Kind, v2), pt, c.Expiry)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	var text [384]byte
	prefix := compactPrefix
	if v2 {
		prefix = compactPrefixV2
	}
	out := append(text[:0], prefix...)
	out = b64.AppendEncode(out, sealed)
	return string(out), nil
}

func appendCompactClaims(dst []byte, c *Claims) []byte {
	dst = append(dst, c.ID[:]...)
	if !c.Epoch.IsZero() {
		dst = append(dst, c.Epoch[:]...)
	}
	dst = wire.AppendUvarint(dst, uint64(c.Expiry.Unix()-c.IssuedAt.Unix())) // whole seconds (Issue)
	dst = wire.AppendString(dst, c.SessionID)
	dst = wire.AppendString(dst, c.Subject)
	dst = wire.AppendString(dst, c.ElicitationID)
	switch c.Kind {
	case OAuthState:
		dst = wire.AppendString(dst, c.CodeVerifier)
		dst = wire.AppendString(dst, c.Provider)
	case RequestState:
		dst = wire.AppendString(dst, c.Tool)
		dst = append(dst, c.ArgsHash[:]...)
		dst = wire.AppendBytes(dst, c.State)
	}
	return dst
}

// decodeB64 decodes strict, canonical base64url: CR and LF, which
// encoding/base64 skips even in strict mode, are caught by the length check.
func decodeB64(s string) ([]byte, bool) {
	return appendDecodeB64(nil, s)
}

// appendDecodeB64 is decodeB64 that appends to dst.
func appendDecodeB64(dst []byte, s string) ([]byte, bool) {
	out, err := b64.AppendDecode(dst, []byte(s))
	if err != nil || b64.EncodedLen(len(out)-len(dst)) != len(s) {
		return dst, false
	}
	return out, true
}

func (s *Service) verifyCompact(tok string, kind Kind, v2 bool) (*Claims, error) {
	// Typical tokens are decoded and opened in place on the stack; the
	// plaintext is cleared before returning.
	var buf [256]byte
	sealed, ok := appendDecodeB64(buf[:0], tok[len(compactPrefix):])
	if !ok {
		return nil, ErrInvalid
	}
	pt, h, err := s.sealer.AppendOpen(sealed[:0], bindingV(kind, v2), sealed)
	if err != nil {
		return nil, envelopeError(err)
	}
	c := &Claims{Kind: kind, KeyID: h.KeyID, Expiry: h.Expiry}
	claims := pt
	if v2 {
		n, e := len(c.ID), len(c.Epoch)
		if len(pt) < n+e {
			clear(pt)
			return nil, ErrInvalid
		}
		copy(c.Epoch[:], pt[n:n+e])
		if c.Epoch.IsZero() {
			clear(pt)
			return nil, ErrInvalid
		}
		// The token ID moves up over the epoch, in place, so that the
		// claims read as version 1's and pt is still what is cleared.
		copy(pt[e:n+e], pt[:n])
		claims = pt[e:]
	}
	err = decodeCompactClaims(claims, c)
	clear(pt)
	if err != nil {
		return nil, ErrInvalid
	}
	return c, nil
}

// envelopeError maps the envelope's sentinels to the token's.
func envelopeError(err error) error {
	switch {
	case errors.Is(err, envelope.ErrExpired):
		return ErrExpired
	case errors.Is(err, envelope.ErrUnknownKey):
		return ErrUnknownKey
	}
	return ErrInvalid
}

var errMalformed = errors.New("token: malformed claims")

// decodeCompactClaims decodes pt into c, whose Kind and Expiry are set.
// The format carries the claims of c's kind only, so that checkFields
// checks what check would.
func decodeCompactClaims(pt []byte, c *Claims) error {
	if len(pt) < len(c.ID) {
		return errMalformed
	}
	c.ID = [len(c.ID)]byte(pt)
	life, rest, err := wire.ReadUvarint(pt[len(c.ID):])
	if err != nil || life < 1 || life > uint64(MaxTTL/time.Second) {
		return errMalformed
	}
	// Expiry − life, as Expiry.Add would give it, without its checks.
	c.IssuedAt = time.Unix(c.Expiry.Unix()-int64(life), int64(c.Expiry.Nanosecond()))

	// The strings are decoded into one buffer and converted to one string,
	// which the claims share: one allocation instead of one per claim.
	var buf [256]byte
	var ends [5]int
	count := 3
	switch c.Kind {
	case OAuthState:
		count = 5
	case RequestState:
		count = 4
	}
	b := buf[:0]
	for i := range count {
		if b, rest, err = wire.AppendReadString(b, rest); err != nil {
			return err
		}
		ends[i] = len(b)
	}
	all := string(b)
	c.SessionID, c.Subject, c.ElicitationID = all[:ends[0]], all[ends[0]:ends[1]], all[ends[1]:ends[2]]
	switch c.Kind {
	case OAuthState:
		c.CodeVerifier, c.Provider = all[ends[2]:ends[3]], all[ends[3]:ends[4]]
	case RequestState:
		c.Tool = all[ends[2]:ends[3]]
		if len(rest) < len(c.ArgsHash) {
			return errMalformed
		}
		c.ArgsHash, rest = [len(c.ArgsHash)]byte(rest), rest[len(c.ArgsHash):]
		var state []byte
		if state, rest, err = wire.ReadBytes(rest); err != nil {
			return err
		}
		if len(state) > 0 {
			c.State = bytes.Clone(state) // pt is the caller's, and cleared
		}
	}
	if len(rest) != 0 {
		return errMalformed
	}
	return c.checkFields()
}

// Package credential is the binary format of an OAuth 2.0 credential as
// the vault of package elicit/oauth seals it:
//
//	version        1 byte: 0x01
//	expiry         uvarint: the access token's expiry in Unix seconds, 0 for none
//	access token   uvarint length || bytes
//	token type     uvarint length || bytes
//	refresh token  uvarint length || bytes
//	scope          uvarint length || bytes (the granted scope, space-separated)
//
// with nothing after. Every string is at most MaxField bytes. The format
// carries no identity: the record that holds it is bound to the subject and
// the provider by its envelope.
package credential

import (
	"encoding/binary"
	"errors"
	"time"
)

// Version is the format's first byte.
const Version = 0x01

// MaxField bounds each string field, in bytes.
const MaxField = 16 << 10

// ErrMalformed is returned by Decode for anything but a valid encoding.
var ErrMalformed = errors.New("credential: malformed")

// Credential is a decoded credential.
type Credential struct {
	AccessToken  string
	TokenType    string
	RefreshToken string
	Scope        string
	Expiry       time.Time // zero: the access token does not expire
}

// Append appends the encoding of c to dst. It fails for a field beyond
// MaxField or an expiry before 1970.
func Append(dst []byte, c *Credential) ([]byte, error) {
	var exp uint64
	if !c.Expiry.IsZero() {
		if c.Expiry.Unix() < 1 {
			return dst, ErrMalformed
		}
		exp = uint64(c.Expiry.Unix())
	}
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, exp)
	for _, f := range [...]string{c.AccessToken, c.TokenType, c.RefreshToken, c.Scope} {
		if len(f) > MaxField {
			return dst, ErrMalformed
		}
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst, nil
}

// Decode decodes b. It accepts exactly the encodings Append produces.
func Decode(b []byte) (*Credential, error) {
	if len(b) < 1 || b[0] != Version {
		return nil, ErrMalformed
	}
	b = b[1:]
	exp, n := binary.Uvarint(b)
	if n <= 0 || exp > 1<<40 || (n > 1 && b[n-1] == 0) {
		return nil, ErrMalformed
	}
	b = b[n:]
	c := &Credential{}
	if exp != 0 {
		c.Expiry = time.Unix(int64(exp), 0)
	}
	for _, f := range [...]*string{&c.AccessToken, &c.TokenType, &c.RefreshToken, &c.Scope} {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > MaxField || (n > 1 && b[n-1] == 0) || uint64(len(b)-n) < l {
			return nil, ErrMalformed
		}
		*f = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	if len(b) != 0 {
		return nil, ErrMalformed
	}
	return c, nil
}

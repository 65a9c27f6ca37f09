package fuzz

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/credential"
)

// FuzzCredential decodes the plaintext of a vault credential (the OAuth
// tokens of elicit/oauth): anything but a canonical encoding is
// ErrMalformed, and what decodes encodes back to the same bytes.
func FuzzCredential(f *testing.F) {
	for _, c := range []*credential.Credential{
		{},
		{AccessToken: "at-1", TokenType: "Bearer", RefreshToken: "rt-1", Scope: "openid offline_access", Expiry: time.Unix(1800000000, 0)},
		{AccessToken: "only an access token"},
	} {
		b, err := credential.Append(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{1, 0x80, 0})
	f.Add([]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := credential.Decode(b)
		if err != nil {
			if !errors.Is(err, credential.ErrMalformed) || c != nil {
				t.Fatalf("Decode: %v, %v", c, err)
			}
			return
		}
		again, err := credential.Append(nil, c)
		if err != nil {
			t.Fatalf("a decoded credential does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("not canonical: %x decodes and encodes to %x", b, again)
		}
	})
}

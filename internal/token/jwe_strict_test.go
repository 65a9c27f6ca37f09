package token

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/ring"
)

// A claim set that encoding/json reads loosely is refused: a repeated
// claim (which it would take the last of), a null, a nested value, a
// claim spelled in another case.
func TestJWEStrictClaims(t *testing.T) {
	k, err := ring.New([]byte("jwe strict test secret, thirty-two bytes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	jti := base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	base := fmt.Sprintf(`"exp":%d,"iat":%d,"jti":%q,"sid":"s","eid":"e","knd":"url"`, now+60, now-1, jti)
	seal := func(pt string) string {
		id := k.PrimaryKeyID()
		block, _ := aes.NewCipher(s.jwe[id])
		gcm, _ := cipher.NewGCM(block)
		b64 := base64.RawURLEncoding
		header := b64.EncodeToString([]byte(`{"alg":"dir","enc":"A256GCM","kid":"` + id.String() + `"}`))
		nonce := make([]byte, 12)
		sealed := gcm.Seal(nil, nonce, []byte(pt), []byte(header))
		n := len(sealed) - 16
		return header + ".." + b64.EncodeToString(nonce) + "." + b64.EncodeToString(sealed[:n]) + "." + b64.EncodeToString(sealed[n:])
	}
	c, err := s.Verify(seal("{"+base+`,"sub":"alice"}`), Expect{Kind: URL})
	if err != nil || c.Subject != "alice" {
		t.Fatalf("a well-formed claim set: %v", err)
	}
	for name, pt := range map[string]string{
		"repeated sub":  "{" + base + `,"sub":"alice","sub":"bob"}`,
		"repeated sid":  "{" + base + `,"sid":"other"}`,
		"null sub":      "{" + base + `,"sub":null}`,
		"nested sub":    "{" + base + `,"sub":{"a":"b"}}`,
		"array":         "{" + base + `,"sub":["a"]}`,
		"bool":          "{" + base + `,"sub":true}`,
		"other case":    "{" + base + `,"SUB":"alice"}`,
		"unknown":       "{" + base + `,"x":"y"}`,
		"trailing":      "{" + base + `} {}`,
		"not an object": `["x"]`,
	} {
		if _, err := s.Verify(seal(pt), Expect{Kind: URL}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

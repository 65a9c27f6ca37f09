package fuzz

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
)

// The token targets follow the envelope targets' method: their authentic
// seeds are built here, from the formats as TOKENS.md specifies
// them, with fixed secrets (A primary, B previous, C unknown), fixed
// nonces, fixed token IDs and a fixed clock. So the set of tokens that
// verify is known and the same in every run, and a token that verifies
// must be one of them, with exactly the claims it was built with. (Tokens
// issued by token.Service cannot be seeds: their random token IDs and
// nonces would differ between the fuzzing coordinator and its workers.)

var tokB64 = base64.RawURLEncoding

// tokSeed is a token whose outcome is fixed.
type tokSeed struct {
	claims  token.Claims // what Verify must return (KeyID included)
	expired bool
}

// tokKnown maps token text to its seed.
type tokKnown map[string]tokSeed

// tokString encodes a claim string as TOKENS.md specifies: uvarint(n<<2 |
// mode) then the body; UUID (mode 1), base32 (2) and base64url (3)
// characters packed when shorter, else raw (0).
func tokString(dst []byte, s string) []byte {
	isUUID := len(s) == 36
	for i := 0; isUUID && i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			isUUID = c == '-'
		} else {
			isUUID = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
		}
	}
	if isUUID {
		dst = append(dst, 1)
		h := strings.ReplaceAll(s, "-", "")
		for i := 0; i < 32; i += 2 {
			var b byte
			for _, c := range h[i : i+2] {
				b <<= 4
				if c <= '9' {
					b |= byte(c - '0')
				} else {
					b |= byte(c - 'a' + 10)
				}
			}
			dst = append(dst, b)
		}
		return dst
	}
	for _, m := range []struct {
		mode  uint64
		bits  int
		alpha string
	}{
		{2, 5, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"},
		{3, 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"},
	} {
		if len(s) == 0 || !allIn(s, m.alpha) || (len(s)*m.bits+7)/8 >= len(s) {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(len(s))<<2|m.mode)
		var acc, have uint
		for i := range len(s) {
			acc = acc<<m.bits | uint(strings.IndexByte(m.alpha, s[i]))
			have += uint(m.bits)
			for have >= 8 {
				have -= 8
				dst = append(dst, byte(acc>>have))
			}
		}
		if have > 0 {
			dst = append(dst, byte(acc<<(8-have)))
		}
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))<<2)
	return append(dst, s...)
}

func allIn(s, alpha string) bool {
	for i := range len(s) {
		if strings.IndexByte(alpha, s[i]) < 0 {
			return false
		}
	}
	return true
}

// tokCompact builds a compact token: "ev1." + base64url(envelope sealed
// for the unbound purpose "token/<kind>"), the claims as plaintext.
func tokCompact(secret *keyschedule.Secret, c *token.Claims, nonce byte) string {
	pt := append([]byte(nil), c.ID[:]...)
	pt = binary.AppendUvarint(pt, uint64(c.Expiry.Sub(c.IssuedAt)/time.Second))
	pt = tokString(pt, c.SessionID)
	pt = tokString(pt, c.Subject)
	pt = tokString(pt, c.ElicitationID)
	switch c.Kind {
	case token.OAuthState:
		pt = tokString(pt, c.CodeVerifier)
		pt = tokString(pt, c.Provider)
	case token.RequestState:
		pt = tokString(pt, c.Tool)
		pt = append(pt, c.ArgsHash[:]...)
		pt = binary.AppendUvarint(pt, uint64(len(c.State)))
		pt = append(pt, c.State...)
	}
	b := envelope.Binding{Purpose: "token/" + string(c.Kind), Unbound: true}
	return "ev1." + tokB64.EncodeToString(sealWith(secret, b, nonce, pt, c.Expiry))
}

// tokJWE builds a compact JWE: dir, A256GCM, kid, the "token/jwe" key, a
// fixed IV, the claims JSON as plaintext.
func tokJWE(secret *keyschedule.Secret, c *token.Claims, iv byte) string {
	key, err := secret.Key("token/jwe")
	if err != nil {
		panic(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	header := tokB64.EncodeToString([]byte(`{"alg":"dir","enc":"A256GCM","kid":"` + secret.KeyID().String() + `"}`))
	payload := map[string]any{
		"exp": c.Expiry.Unix(), "iat": c.IssuedAt.Unix(), "jti": tokB64.EncodeToString(c.ID[:]),
		"sid": c.SessionID, "eid": c.ElicitationID, "knd": string(c.Kind),
	}
	if c.Subject != "" {
		payload["sub"] = c.Subject
	}
	if c.CodeVerifier != "" {
		payload["pkce"] = c.CodeVerifier
	}
	if c.Provider != "" {
		payload["prv"] = c.Provider
	}
	if c.Kind == token.RequestState {
		payload["tool"] = c.Tool
		payload["args"] = tokB64.EncodeToString(c.ArgsHash[:])
		if len(c.State) > 0 {
			payload["state"] = tokB64.EncodeToString(c.State)
		}
	}
	pt, _ := json.Marshal(payload)
	nonce := make([]byte, 12)
	nonce[0] = iv
	sealed := gcm.Seal(nil, nonce, pt, []byte(header))
	ct, tag := sealed[:len(sealed)-16], sealed[len(sealed)-16:]
	return header + ".." + tokB64.EncodeToString(nonce) + "." + tokB64.EncodeToString(ct) + "." + tokB64.EncodeToString(tag)
}

// tokClaims returns the fixed claims of seed number i of kind k.
func tokClaims(k token.Kind, i int, secret *keyschedule.Secret, expiry time.Time) token.Claims {
	c := token.Claims{
		Kind:          k,
		KeyID:         secret.KeyID(),
		IssuedAt:      expiry.Add(-10 * time.Minute),
		Expiry:        expiry,
		SessionID:     []string{"5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "sess 1", "dGhpcyBpcyAxNiBieXRlcw"}[i%3],
		Subject:       []string{"0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "", "ada@example.com"}[i%3],
		ElicitationID: []string{"R4NXKQ2VHD7JW3LMZPB6TCYE5A", "e", "ABC"}[i%3],
	}
	c.ID[0], c.ID[15] = byte(i), 0xEE
	switch k {
	case token.OAuthState:
		if i%2 == 0 {
			c.CodeVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
		}
		if i%3 != 1 {
			c.Provider = []string{"github", "", "google.com"}[i%3]
		}
	case token.RequestState:
		c.Tool = "delete_contacts"
		c.ArgsHash = sha256.Sum256([]byte(`{"ids":[1,2,3]}`))
		if i%2 == 0 {
			c.State = []byte("round 2")
		}
	}
	return c
}

// tokFixture is the service every token target verifies with, and its
// seeds.
func tokFixture(f *testing.F, format token.Format) (*token.Service, tokKnown) {
	k, err := ring.New([]byte(rawSecretA), [][]byte{[]byte(rawSecretB)}, envelope.WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	svc, err := token.NewService(k, nil)
	if err != nil {
		f.Fatal(err)
	}
	known := tokKnown{}
	build := tokCompact
	if format == token.JWE {
		build = tokJWE
	}
	// Expiries are whole seconds, as Issue makes them.
	live, dead := fuzzNow.Add(5*time.Minute), fuzzNow.Add(-time.Second)
	n := byte(0)
	for _, kind := range token.Kinds {
		for i := range 3 {
			for _, tc := range []struct {
				secret  *keyschedule.Secret
				expiry  time.Time
				outcome string // "ok", "expired", "unknown key"
			}{{secretA, live, "ok"}, {secretB, live, "ok"}, {secretA, dead, "expired"}, {secretC, live, "unknown key"}} {
				c := tokClaims(kind, i, tc.secret, tc.expiry)
				n++
				tok := build(tc.secret, &c, n)
				f.Add(tok)
				if tc.outcome != "unknown key" {
					known[tok] = tokSeed{claims: c, expired: tc.outcome == "expired"}
				}
				addTokenMutations(f, tok)
			}
		}
	}
	for _, junk := range []string{"", ".", "....", "ev1.", "ev1", "ev1.AAAA", "eyJ....", "ev1.\n", strings.Repeat("A", 200),
		"eyJhbGciOiJub25lIn0..AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA",
		tokB64.EncodeToString([]byte(`{"alg":"dir","enc":"A256GCM","kid":"`+secretA.KeyID().String()+`","zip":"DEF"}`)) + "..AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA",
	} {
		f.Add(junk)
	}
	return svc, known
}

// addTokenMutations adds truncations, flipped characters, an extra
// character, and (for JWE) a non-empty encrypted key: all must be
// rejected.
func addTokenMutations(f *testing.F, tok string) {
	for _, n := range []int{0, 3, 4, 5, 20, len(tok) / 2, len(tok) - 2, len(tok) - 1} {
		if n >= 0 && n < len(tok) {
			f.Add(tok[:n])
		}
	}
	for _, i := range []int{4, 10, len(tok) - 1} {
		b := []byte(tok)
		b[i] ^= 1
		f.Add(string(b))
	}
	f.Add(tok + "A")
	f.Add(strings.Replace(tok, "..", ".AAAA.", 1))
}

// checkToken verifies tok as every kind and holds the outcome to the seed
// set.
func checkToken(t *testing.T, svc *token.Service, known tokKnown, tok string) {
	token.PeekKeyID(tok) // must not panic
	for _, k := range token.Kinds {
		c, err := svc.Verify(tok, token.Expect{Kind: k})
		s, isKnown := known[tok]
		switch {
		case err == nil:
			if !isKnown || s.expired || s.claims.Kind != k {
				t.Fatalf("Verify accepted a token that was not issued (as %s): %q", k, tok)
			}
			if !tokEqual(c, &s.claims) {
				t.Fatalf("claims differ:\n got %+v\nwant %+v", c, s.claims)
			}
		case errors.Is(err, token.ErrExpired):
			if !isKnown || !s.expired || s.claims.Kind != k {
				t.Fatalf("expired reported for a token that is not an expired seed of kind %s: %q", k, tok)
			}
		case errors.Is(err, token.ErrInvalid), errors.Is(err, token.ErrUnknownKey):
			if isKnown && s.claims.Kind == k {
				t.Fatalf("a seed of kind %s was rejected: %v", k, err)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if err != nil {
			checkTokenErrorText(t, err)
		}
	}
}

// checkTokenErrorText: Verify's errors are its sentinels, whose text is
// fixed, so no error can carry any part of the token.
func checkTokenErrorText(t *testing.T, err error) {
	switch err {
	case token.ErrInvalid, token.ErrExpired, token.ErrUnknownKey:
	default:
		t.Fatalf("Verify returned %q, not one of its sentinels", err)
	}
}

func tokEqual(a, b *token.Claims) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.KeyID == b.KeyID &&
		a.IssuedAt.Equal(b.IssuedAt) && a.Expiry.Equal(b.Expiry) &&
		a.SessionID == b.SessionID && a.Subject == b.Subject && a.ElicitationID == b.ElicitationID &&
		a.CodeVerifier == b.CodeVerifier && a.Provider == b.Provider && a.Tool == b.Tool && a.ArgsHash == b.ArgsHash &&
		bytes.Equal(a.State, b.State)
}

// FuzzCompactVerify feeds compact tokens (and anything else) to Verify.
func FuzzCompactVerify(f *testing.F) {
	svc, known := tokFixture(f, token.Compact)
	f.Fuzz(func(t *testing.T, tok string) { checkToken(t, svc, known, tok) })
}

// FuzzJWEVerify feeds JWE tokens (and anything else) to Verify.
func FuzzJWEVerify(f *testing.F) {
	svc, known := tokFixture(f, token.JWE)
	f.Fuzz(func(t *testing.T, tok string) { checkToken(t, svc, known, tok) })
}

// TestTokenSeedsFromSpec checks that the seeds built from TOKENS.md are
// what the package accepts: the written format and the code agree.
func TestTokenSeedsFromSpec(t *testing.T) {
	for _, format := range []token.Format{token.Compact, token.JWE} {
		k, err := ring.New([]byte(rawSecretA), [][]byte{[]byte(rawSecretB)}, envelope.WithClock(fixedClock))
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := token.NewService(k, nil)
		build := tokCompact
		if format == token.JWE {
			build = tokJWE
		}
		for _, kind := range token.Kinds {
			for i := range 3 {
				c := tokClaims(kind, i, secretA, fuzzNow.Add(time.Minute))
				got, err := svc.Verify(build(secretA, &c, byte(i)), token.Expect{Kind: kind})
				if err != nil || !tokEqual(got, &c) {
					t.Fatalf("%v %s %d: %v\n got %+v\nwant %+v", format, kind, i, err, got, c)
				}
			}
		}
	}
}

package token_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

const (
	secretA = "token-test-secret-A-0123456789abcdefghij"
	secretB = "token-test-secret-B-0123456789abcdefghij"
	secretC = "token-test-secret-C-0123456789abcdefghij"
)

// clock is a settable clock for the keyring.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func keyring(t testing.TB, clk *clock, primary string, previous ...string) *ring.Keyring {
	t.Helper()
	var prev [][]byte
	for _, p := range previous {
		prev = append(prev, []byte(p))
	}
	var opts []envelope.Option
	if clk != nil {
		opts = append(opts, envelope.WithClock(clk.Now))
	}
	k, err := ring.New([]byte(primary), prev, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func service(t testing.TB, k *ring.Keyring, st store.Store) *token.Service {
	t.Helper()
	s, err := token.NewService(k, st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var formats = []token.Format{token.Compact, token.JWE}

// typical returns claims of kind k with go-sdk-like identifiers: session and
// elicitation IDs of crypto/rand Text (26 base32 characters), a UUID subject.
func typical(k token.Kind) token.Claims {
	c := token.Claims{
		Kind:          k,
		SessionID:     "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E",
		Subject:       "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44",
		ElicitationID: "R4NXKQ2VHD7JW3LMZPB6TCYE5A",
	}
	switch k {
	case token.OAuthState:
		c.CodeVerifier = strings.Repeat("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", 1)
		c.Provider = "github"
	case token.RequestState:
		c.Tool = "delete_contacts"
		c.ArgsHash, _ = token.HashArgs([]byte(`{"ids":[1,2,3],"confirm":true}`))
		c.State = []byte("round 2 of 3")
	}
	return c
}

func issue(t testing.TB, s *token.Service, c token.Claims, f token.Format) (string, token.Claims) {
	t.Helper()
	tok, err := s.Issue(&c, 0, f)
	if err != nil {
		t.Fatal(err)
	}
	return tok, c
}

func equalClaims(a, b *token.Claims) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.KeyID == b.KeyID &&
		a.IssuedAt.Equal(b.IssuedAt) && a.Expiry.Equal(b.Expiry) &&
		a.SessionID == b.SessionID && a.Subject == b.Subject && a.ElicitationID == b.ElicitationID &&
		a.CodeVerifier == b.CodeVerifier && a.Provider == b.Provider && a.Tool == b.Tool && a.ArgsHash == b.ArgsHash &&
		bytes.Equal(a.State, b.State)
}

func TestRoundTrip(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		for _, k := range token.Kinds {
			for _, sub := range []string{"", "user-1"} {
				c := typical(k)
				c.Subject = sub
				tok, issued := issue(t, s, c, f)
				got, err := s.Verify(tok, token.Expect{Kind: k, SessionID: c.SessionID, Subject: sub,
					ElicitationID: c.ElicitationID, Tool: c.Tool, ArgsHash: c.ArgsHash})
				if err != nil {
					t.Fatalf("%v %s: %v", f, k, err)
				}
				if !equalClaims(got, &issued) {
					t.Errorf("%v %s: claims differ:\n got %+v\nwant %+v", f, k, got, issued)
				}
				if got.Expiry.Sub(got.IssuedAt) != k.DefaultTTL() {
					t.Errorf("%v %s: lifetime %v, want %v", f, k, got.Expiry.Sub(got.IssuedAt), k.DefaultTTL())
				}
			}
		}
	}
}

func TestEdgeClaimsRoundTrip(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	odd := []string{"a", "ab", "abc", "abcd", "ABCDEFG", "A2", "héllo wörld", "x\x00y", strings.Repeat("Z", 256),
		"0B9F3C2E-8D41-4A6E-9F0C-3D2B1A7E5C44", "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c4", "user@example.com", "a.b~c"}
	for _, f := range formats {
		for _, v := range odd {
			for _, k := range token.Kinds {
				c := typical(k)
				c.SessionID, c.Subject, c.ElicitationID = v, v+"s", "e"+v
				if len(v) >= token.MaxIDSize {
					c.Subject, c.ElicitationID = v, v
				}
				if k == token.RequestState {
					c.Tool, c.State = v, nil
				}
				tok, issued := issue(t, s, c, f)
				got, err := s.Verify(tok, token.Expect{Kind: k, SessionID: c.SessionID, Subject: c.Subject})
				if err != nil || !equalClaims(got, &issued) {
					t.Fatalf("%v %s %q: %v\n got %+v\nwant %+v", f, k, v, err, got, issued)
				}
			}
		}
	}
}

func TestIssueRejects(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	long := strings.Repeat("x", token.MaxIDSize+1)
	for name, mut := range map[string]func(*token.Claims){
		"no kind":            func(c *token.Claims) { c.Kind = "" },
		"unknown kind":       func(c *token.Claims) { c.Kind = "cookie" },
		"no session":         func(c *token.Claims) { c.SessionID = "" },
		"no elicitation":     func(c *token.Claims) { c.ElicitationID = "" },
		"long subject":       func(c *token.Claims) { c.Subject = long },
		"verifier on url":    func(c *token.Claims) { c.CodeVerifier = strings.Repeat("a", 43) },
		"provider on url":    func(c *token.Claims) { c.Provider = "github" },
		"long provider":      func(c *token.Claims) { *c = typical(token.OAuthState); c.Provider = strings.Repeat("p", 257) },
		"tool on url":        func(c *token.Claims) { c.Tool = "t" },
		"state on url":       func(c *token.Claims) { c.State = []byte{1} },
		"request no tool":    func(c *token.Claims) { *c = typical(token.RequestState); c.Tool = "" },
		"request no args":    func(c *token.Claims) { *c = typical(token.RequestState); c.ArgsHash = [32]byte{} },
		"request long state": func(c *token.Claims) { *c = typical(token.RequestState); c.State = make([]byte, token.MaxStateSize+1) },
		"short verifier":     func(c *token.Claims) { *c = typical(token.OAuthState); c.CodeVerifier = "short" },
		"bad verifier":       func(c *token.Claims) { *c = typical(token.OAuthState); c.CodeVerifier = strings.Repeat("a", 42) + "!" },
	} {
		c := typical(token.URL)
		mut(&c)
		var ce *token.ClaimsError
		if _, err := s.Issue(&c, 0, token.Compact); !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a ClaimsError", name, err)
		}
	}
	c := typical(token.URL)
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond, token.MaxTTL + time.Second} {
		if _, err := s.Issue(&c, ttl, token.Compact); err == nil {
			t.Errorf("ttl %v accepted", ttl)
		}
	}
	if _, err := s.Issue(&c, 0, token.Format(7)); err == nil {
		t.Error("unknown format accepted")
	}
}

// b64url is the base64url alphabet.
const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// mutations returns every token that differs from tok in one character of
// [from, to), replaced by each other base64url character.
func eachChange(tok string, from, to int, fn func(string)) {
	b := []byte(tok)
	for i := from; i < to; i++ {
		orig := b[i]
		for j := range len(b64url) {
			if b64url[j] == orig {
				continue
			}
			b[i] = b64url[j]
			fn(string(b))
		}
		b[i] = orig
	}
}

func TestCompactEveryChangeRejected(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, k := range token.Kinds {
		tok, _ := issue(t, s, typical(k), token.Compact)
		n := 0
		eachChange(tok, len("ev1."), len(tok), func(m string) {
			n++
			if _, err := s.Verify(m, token.Expect{Kind: k}); err == nil {
				t.Fatalf("%s: a changed token verified", k)
			}
		})
		// And the prefix: any other character there is not the compact format.
		for i := range 4 {
			for _, r := range []byte("ev1.xyzEV2_-") {
				if r == tok[i] {
					continue
				}
				m := tok[:i] + string(r) + tok[i+1:]
				if _, err := s.Verify(m, token.Expect{Kind: k}); err == nil {
					t.Fatalf("%s: changed prefix verified", k)
				}
			}
		}
		t.Logf("%s: %d changes rejected", k, n)
	}
}

func TestJWEEveryChangeRejected(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, k := range token.Kinds {
		tok, _ := issue(t, s, typical(k), token.JWE)
		segs := strings.Split(tok, ".")
		if len(segs) != 5 || segs[1] != "" {
			t.Fatalf("JWE segments: %d, encrypted key %q", len(segs), segs[1])
		}
		off := 0
		for i, seg := range segs {
			n := 0
			eachChange(tok, off, off+len(seg), func(m string) {
				n++
				if _, err := s.Verify(m, token.Expect{Kind: k}); err == nil {
					t.Fatalf("%s: a change in segment %d verified", k, i)
				}
			})
			// Insertions, for the empty encrypted key in particular.
			for _, c := range []string{"A", "AA", "AAAA", "_"} {
				m := tok[:off] + c + tok[off:]
				if _, err := s.Verify(m, token.Expect{Kind: k}); err == nil {
					t.Fatalf("%s: an insertion into segment %d verified", k, i)
				}
			}
			off += len(seg) + 1
			if i > 0 && n == 0 && seg != "" {
				t.Fatalf("no change tried in segment %d", i)
			}
		}
	}
}

func TestTruncatedAndJunkRejected(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		tok, _ := issue(t, s, typical(token.URL), f)
		for i := range len(tok) {
			if _, err := s.Verify(tok[:i], token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrInvalid) {
				t.Fatalf("%v: truncated to %d: %v, want ErrInvalid", f, i, err)
			}
		}
		for _, junk := range []string{tok + "A", tok + "\n", tok[:10] + "\n" + tok[10:], " " + tok, tok + ".", tok + "=",
			strings.ToUpper(tok), "", ".", "....", "ev1.", strings.Repeat("A", token.MaxTokenSize+1)} {
			if _, err := s.Verify(junk, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrInvalid) {
				t.Fatalf("%v: junk %.40q: %v, want ErrInvalid", f, junk, err)
			}
		}
	}
}

func TestWrongKindRejected(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		for _, k := range token.Kinds {
			tok, _ := issue(t, s, typical(k), f)
			for _, other := range token.Kinds {
				_, err := s.Verify(tok, token.Expect{Kind: other})
				if other == k && err != nil {
					t.Errorf("%v %s: %v", f, k, err)
				}
				if other != k && !errors.Is(err, token.ErrInvalid) {
					t.Errorf("%v: %s token as %s: %v, want ErrInvalid", f, k, other, err)
				}
			}
		}
	}
	if _, err := s.Verify("x", token.Expect{}); err == nil || errors.Is(err, token.ErrInvalid) {
		t.Errorf("no expected kind: %v", err)
	}
}

func TestExpired(t *testing.T) {
	clk := newClock()
	s := service(t, keyring(t, clk, secretA), nil)
	for _, f := range formats {
		tok, c := issue(t, s, typical(token.URL), f)
		clk.Add(token.URL.DefaultTTL() - time.Second)
		if _, err := s.Verify(tok, token.Expect{Kind: token.URL}); err != nil {
			t.Fatalf("%v: a second before expiry: %v", f, err)
		}
		clk.Add(time.Second)
		_, err := s.Verify(tok, token.Expect{Kind: token.URL})
		if !errors.Is(err, token.ErrExpired) || !errors.Is(err, envelope.ErrExpired) {
			t.Fatalf("%v: at expiry %v: %v, want ErrExpired", f, c.Expiry, err)
		}
		// Expiry is reported only for an authentic token of the right kind.
		if _, err := s.Verify(tok, token.Expect{Kind: token.OAuthState}); !errors.Is(err, token.ErrInvalid) {
			t.Fatalf("%v: expired, wrong kind: %v, want ErrInvalid", f, err)
		}
		clk.Add(-token.URL.DefaultTTL())
	}
	// A custom TTL.
	c := typical(token.RequestState)
	tok, err := s.Issue(&c, 90*time.Second, token.Compact)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(91 * time.Second)
	if _, err := s.Verify(tok, token.Expect{Kind: token.RequestState}); !errors.Is(err, token.ErrExpired) {
		t.Fatalf("custom ttl: %v", err)
	}
}

func TestRotation(t *testing.T) {
	old := service(t, keyring(t, nil, secretA), nil)
	rotated := service(t, keyring(t, nil, secretB, secretA), nil)
	other := service(t, keyring(t, nil, secretC), nil)
	for _, f := range formats {
		tok, c := issue(t, old, typical(token.URL), f)
		got, err := rotated.Verify(tok, token.Expect{Kind: token.URL})
		if err != nil {
			t.Fatalf("%v: previous secret: %v", f, err)
		}
		if got.KeyID != c.KeyID {
			t.Errorf("%v: key ID %v, want %v", f, got.KeyID, c.KeyID)
		}
		_, err = other.Verify(tok, token.Expect{Kind: token.URL})
		if !errors.Is(err, token.ErrUnknownKey) || !errors.Is(err, envelope.ErrUnknownKey) {
			t.Fatalf("%v: another secret: %v, want ErrUnknownKey", f, err)
		}
		tok2, c2 := issue(t, rotated, typical(token.URL), f)
		if c2.KeyID == c.KeyID {
			t.Fatal("rotated service issues under the old key")
		}
		if _, err := old.Verify(tok2, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrUnknownKey) {
			t.Fatalf("%v: new token on an old node: %v", f, err)
		}
	}
}

func TestProviderBinding(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		tok, c := issue(t, s, typical(token.OAuthState), f)
		if got, err := s.Verify(tok, token.Expect{Kind: token.OAuthState, Provider: c.Provider}); err != nil || got.Provider != "github" {
			t.Fatalf("%v: %v, provider %q", f, err, got.Provider)
		}
		if _, err := s.Verify(tok, token.Expect{Kind: token.OAuthState, Provider: "gitlab"}); !errors.Is(err, token.ErrInvalid) {
			t.Errorf("%v: a state of github verified for gitlab: %v", f, err)
		}
	}
}

func TestBindingMismatch(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		tok, c := issue(t, s, typical(token.RequestState), f)
		full := token.Expect{Kind: token.RequestState, SessionID: c.SessionID, Subject: c.Subject,
			ElicitationID: c.ElicitationID, Tool: c.Tool, ArgsHash: c.ArgsHash}
		if _, err := s.Verify(tok, full); err != nil {
			t.Fatal(err)
		}
		otherArgs, _ := token.HashArgs([]byte(`{"ids":[1,2,4],"confirm":true}`))
		for name, mut := range map[string]func(*token.Expect){
			"session":             func(e *token.Expect) { e.SessionID += "x" },
			"subject":             func(e *token.Expect) { e.Subject = "someone-else" },
			"anonymous w/session": func(e *token.Expect) { e.Subject = "" },
			"subject alone":       func(e *token.Expect) { *e = token.Expect{Kind: e.Kind, Subject: "someone-else"} },
			"elicitation":         func(e *token.Expect) { e.ElicitationID = "other" },
			"tool":                func(e *token.Expect) { e.Tool = "delete_everything" },
			"args":                func(e *token.Expect) { e.ArgsHash = otherArgs },
		} {
			want := full
			mut(&want)
			_, err := s.Verify(tok, want)
			if !errors.Is(err, token.ErrInvalid) || !errors.Is(err, envelope.ErrInvalid) {
				t.Errorf("%v: wrong %s: %v, want ErrInvalid", f, name, err)
			}
		}
		// Unset fields are not checked.
		if _, err := s.Verify(tok, token.Expect{Kind: token.RequestState}); err != nil {
			t.Errorf("%v: nothing expected: %v", f, err)
		}
		if _, err := s.Verify(tok, token.Expect{Kind: token.RequestState, Subject: c.Subject}); err != nil {
			t.Errorf("%v: subject alone: %v", f, err)
		}
	}
	// A token without subject does not match a signed-in caller's session.
	c := typical(token.URL)
	c.Subject = ""
	tok, _ := issue(t, s, c, token.Compact)
	if _, err := s.Verify(tok, token.Expect{Kind: token.URL, SessionID: c.SessionID, Subject: "user-1"}); !errors.Is(err, token.ErrInvalid) {
		t.Errorf("anonymous token, signed-in caller: %v", err)
	}
	if _, err := s.Verify(tok, token.Expect{Kind: token.URL, SessionID: c.SessionID}); err != nil {
		t.Errorf("anonymous token, anonymous caller: %v", err)
	}
}

func TestCompactSize(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, tc := range []struct {
		name          string
		sid, sub, eid string
		max           int
	}{
		{"go-sdk session, UUID subject", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", 160},
		{"go-sdk session, no subject", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", 160},
		{"UUID session and elicitation, short subject", "7f1d2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b", "user-8412", "a1b2c3d4-e5f6-4789-8abc-def012345678", 160},
		{"base64url IDs, 24-character subject", "dGhpcyBpcyAxNiBieXRlcw", "google-oauth2-1098765432", "ZWxpY2l0YXRpb24tMDAwMQ", 160},
		{"go-sdk IDs, email subject", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "ada@example.com", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", 160},
		// Beyond "typical": a subject outside every packed alphabet costs a
		// byte per character. Logged, not held to 160.
		{"go-sdk IDs, auth0 subject (informative)", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "auth0|5f7c8ec7c33c6c004bbafe82", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", 200},
	} {
		c := token.Claims{Kind: token.URL, SessionID: tc.sid, Subject: tc.sub, ElicitationID: tc.eid}
		tok, _ := issue(t, s, c, token.Compact)
		t.Logf("%s: %d characters", tc.name, len(tok))
		if len(tok) > tc.max {
			t.Errorf("%s: %d characters, want ≤ %d", tc.name, len(tok), tc.max)
		}
		if url.QueryEscape(tok) != tok || url.PathEscape(tok) != tok {
			t.Errorf("%s: token needs escaping in a URL", tc.name)
		}
		jwe, _ := issue(t, s, c, token.JWE)
		t.Logf("%s: JWE %d characters", tc.name, len(jwe))
	}
}

// TestErrorsCarryNothingSecret collects the error of every rejection path
// and checks that none contains a claim value, a key, the secret or any
// piece of the token.
func TestErrorsCarryNothingSecret(t *testing.T) {
	clk := newClock()
	k := keyring(t, clk, secretA)
	st := memory.New(nil)
	defer st.Close()
	s := service(t, k, st)
	other := service(t, keyring(t, clk, secretC), nil)
	var errs []error
	var secrets []string
	collect := func(_ *token.Claims, err error) {
		if err == nil {
			t.Fatal("expected an error")
		}
		errs = append(errs, err)
	}
	for _, f := range formats {
		for _, kind := range token.Kinds {
			c := typical(kind)
			tok, ic := issue(t, s, c, f)
			secrets = append(secrets, tok, c.SessionID, c.Subject, c.ElicitationID, c.CodeVerifier, c.Provider, c.Tool, string(c.State),
				fmt.Sprintf("%x", ic.ID), fmt.Sprintf("%x", ic.ArgsHash))
			for i := len(tok) / 2; i+12 <= len(tok); i += 12 {
				secrets = append(secrets, tok[i:i+12])
			}
			collect(s.Verify(tok[:len(tok)-3], token.Expect{Kind: kind}))
			collect(s.Verify(tok, token.Expect{Kind: kind, SessionID: "nope"}))
			collect(s.Verify(tok, token.Expect{Kind: kind, Subject: "nope"}))
			collect(s.Verify(tok, token.Expect{Kind: kind, Provider: "nope"}))
			collect(s.Verify(tok, token.Expect{Kind: kind, ElicitationID: "nope"}))
			collect(s.Verify(tok, token.Expect{Kind: kind, Tool: "nope"}))
			collect(s.Verify(tok, token.Expect{Kind: token.Kinds[(indexOf(kind)+1)%3]}))
			collect(other.Verify(tok, token.Expect{Kind: kind}))
			if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: kind}); err != nil {
				t.Fatal(err)
			}
			collect(s.Consume(context.Background(), tok, token.Expect{Kind: kind}))
			clk.Add(time.Hour)
			collect(s.Verify(tok, token.Expect{Kind: kind}))
			collect(s.Consume(context.Background(), tok, token.Expect{Kind: kind}))
			clk.Add(-time.Hour)
			bad := c
			bad.SessionID = ""
			_, err := s.Issue(&bad, 0, f)
			collect(nil, err)
			bad = c
			bad.Subject = strings.Repeat(c.Subject, 20)
			_, err = s.Issue(&bad, 0, f)
			collect(nil, err)
		}
	}
	_, err := token.HashArgs([]byte(`{"password":"hunter2","password":1}`))
	collect(nil, err)
	secrets = append(secrets, "hunter2", secretA, secretC)
	for _, id := range k.KeyIDs() {
		sec, _ := k.Secret(id)
		key, _ := sec.Key("token/jwe")
		secrets = append(secrets, fmt.Sprintf("%x", key), string(key))
		for _, kind := range token.Kinds {
			key, _ := sec.Key("token/" + string(kind))
			secrets = append(secrets, fmt.Sprintf("%x", key), string(key))
		}
	}
	for _, err := range errs {
		msg := err.Error()
		if !strings.HasPrefix(msg, "token: ") {
			t.Errorf("error without prefix: %q", msg)
		}
		for _, sec := range secrets {
			if sec != "" && strings.Contains(msg, sec) {
				t.Errorf("error %q contains a secret value", msg)
			}
		}
		if len(msg) > 80 {
			t.Errorf("long error text: %q", msg)
		}
	}
	t.Logf("%d error paths checked", len(errs))
}

func indexOf(k token.Kind) int {
	for i, x := range token.Kinds {
		if x == k {
			return i
		}
	}
	return -1
}

func TestConsumeOnce(t *testing.T) {
	st := memory.New(nil)
	defer st.Close()
	s := service(t, keyring(t, nil, secretA), st)
	ctx := context.Background()
	for _, f := range formats {
		tok, c := issue(t, s, typical(token.URL), f)
		want := token.Expect{Kind: token.URL, SessionID: c.SessionID, Subject: c.Subject}
		// A mismatch does not use the token up.
		if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.URL, SessionID: "other"}); !errors.Is(err, token.ErrInvalid) {
			t.Fatal(err)
		}
		got, err := s.Consume(ctx, tok, want)
		if err != nil || got.ID != c.ID {
			t.Fatalf("%v: first consume: %v", f, err)
		}
		if _, err := s.Consume(ctx, tok, want); !errors.Is(err, token.ErrReplayed) {
			t.Fatalf("%v: second consume: %v, want ErrReplayed", f, err)
		}
		// Verify alone does not consume and still succeeds.
		if _, err := s.Verify(tok, want); err != nil {
			t.Fatal(err)
		}
	}
	// Another node with another primary agrees on the marker.
	rotated := service(t, keyring(t, nil, secretB, secretA), st)
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	if _, err := rotated.Consume(ctx, tok, token.Expect{Kind: token.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("replay on the old node: %v", err)
	}
	// No store.
	if _, err := service(t, keyring(t, nil, secretA), nil).Consume(ctx, tok, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrNoStore) {
		t.Fatal(err)
	}
}

// TestConsumeConcurrent: 1,000 concurrent consumers of one token on the
// memory store, exactly one success.
func TestConsumeConcurrent(t *testing.T) {
	st := memory.New(nil)
	defer st.Close()
	s := service(t, keyring(t, nil, secretA), st)
	for _, f := range formats {
		tok, _ := issue(t, s, typical(token.URL), f)
		var wins, replays atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 1000 {
			wg.Go(func() {
				<-start
				_, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL})
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, token.ErrReplayed):
					replays.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || replays.Load() != 999 {
			t.Fatalf("%v: %d successes and %d replays, want 1 and 999", f, wins.Load(), replays.Load())
		}
	}
}

type failingStore struct{ store.Store }

func (failingStore) PutIfAbsent(context.Context, string, []byte, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}

func (failingStore) Get(context.Context, string) ([]byte, error) {
	return nil, errors.New("connection refused")
}

func TestConsumeStoreError(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), failingStore{})
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	_, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL})
	if err == nil || errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrReplayed) || !strings.HasPrefix(err.Error(), "token: ") {
		t.Fatalf("store failure: %v", err)
	}
}

func TestSentinels(t *testing.T) {
	for _, tc := range []struct{ tok, env error }{
		{token.ErrInvalid, envelope.ErrInvalid},
		{token.ErrExpired, envelope.ErrExpired},
		{token.ErrUnknownKey, envelope.ErrUnknownKey},
	} {
		if !errors.Is(tc.tok, tc.env) || !errors.Is(fmt.Errorf("wrapped: %w", tc.tok), tc.env) {
			t.Errorf("%v does not match %v", tc.tok, tc.env)
		}
		if errors.Is(tc.env, tc.tok) {
			t.Errorf("%v matches %v the other way round", tc.env, tc.tok)
		}
	}
	if errors.Is(token.ErrReplayed, token.ErrInvalid) || errors.Is(token.ErrInvalid, token.ErrExpired) {
		t.Error("sentinels overlap")
	}
}

func TestHashArgs(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":[true,null,"x"]}`, ` { "b" : [ true , null , "x" ] , "a" : 1.0 } `, `{"b":[true,null,"\u0078"],"a":1e0}`},
		{``, `null`, `{}`, ` {} `},
		{`{"n":100}`, `{"n":1E2}`, `{"n":100.000}`},
		{`{"s":"</script>\u2028"}`, "{\"s\":\"<\\/script>\u2028\"}"},
		{`{"€":1,"a":2}`, `{"a":2,"\u20ac":1}`},
	}
	for _, group := range same {
		h0, err := token.HashArgs([]byte(group[0]))
		if err != nil {
			t.Fatalf("%s: %v", group[0], err)
		}
		for _, in := range group[1:] {
			h, err := token.HashArgs([]byte(in))
			if err != nil || h != h0 {
				t.Errorf("%s and %s hash differently (%v)", group[0], in, err)
			}
		}
	}
	if h, _ := token.HashArgs([]byte(`{"a":1}`)); h != sha256.Sum256([]byte(`{"a":1}`)) {
		t.Error("hash is not SHA-256 of the canonical form")
	}
	different := []string{`{"a":1}`, `{"a":"1"}`, `{"a":2}`, `{"A":1}`, `{"a":[1]}`, `{"a":1,"b":null}`, `{}`}
	seen := map[[32]byte]string{}
	for _, in := range different {
		h, err := token.HashArgs([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[h]; ok {
			t.Errorf("%s and %s hash the same", prev, in)
		}
		seen[h] = in
	}
	for _, bad := range []string{`[1]`, `"x"`, `1`, `{"a":1,"a":2}`, `{"a":1}{}`, `{"a":1e400}`, "{\"a\":\"\xff\"}",
		`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, `{a:1}`, `{"a":1,}`, " ", "\n\t "} {
		if _, err := token.HashArgs([]byte(bad)); !errors.Is(err, token.ErrArgs) {
			t.Errorf("%.40s: %v, want ErrArgs", bad, err)
		}
	}
	if _, err := token.HashArgs([]byte(`{"a":"\ud83d\ude00"}`)); err != nil {
		t.Errorf("surrogate pair: %v", err)
	}
}

func TestPeekKeyIDAndJSON(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	for _, f := range formats {
		for _, k := range token.Kinds {
			tok, c := issue(t, s, typical(k), f)
			id, gotF, ok := token.PeekKeyID(tok)
			if !ok || id != c.KeyID || gotF != f {
				t.Errorf("%v %s: PeekKeyID = %v %v %v", f, k, id, gotF, ok)
			}
			if _, _, ok := token.PeekKeyID(tok[:len(tok)/2]); ok && f == token.JWE {
				t.Errorf("%v: truncated token peeked", f)
			}
			js, err := json.Marshal(&c)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(js, &m); err != nil {
				t.Fatal(err)
			}
			if m["knd"] != string(k) || m["sid"] != c.SessionID || m["exp"] != float64(c.Expiry.Unix()) ||
				m["jti"] != base64.RawURLEncoding.EncodeToString(c.ID[:]) {
				t.Errorf("%v %s: JSON %s", f, k, js)
			}
		}
	}
	for _, junk := range []string{"", "ev1.", "ev1.!!", "a.b.c.d.e", "x"} {
		if _, _, ok := token.PeekKeyID(junk); ok {
			t.Errorf("PeekKeyID(%q) ok", junk)
		}
	}
}

func TestLargestTokens(t *testing.T) {
	s := service(t, keyring(t, nil, secretA), nil)
	long := strings.Repeat("é", token.MaxIDSize/2)
	for _, f := range formats {
		c := typical(token.RequestState)
		c.SessionID, c.Subject, c.ElicitationID, c.Tool = long, long, long, long
		c.State = bytes.Repeat([]byte{0xFF}, token.MaxStateSize)
		tok, issued := issue(t, s, c, f)
		if len(tok) > token.MaxTokenSize {
			t.Fatalf("%v: the largest token has %d characters, over MaxTokenSize", f, len(tok))
		}
		got, err := s.Verify(tok, token.Expect{Kind: token.RequestState, SessionID: long, Subject: long})
		if err != nil || !equalClaims(got, &issued) {
			t.Fatalf("%v: largest token: %v", f, err)
		}
		t.Logf("%v: largest token %d characters", f, len(tok))
	}
}

// TestCompactAllocations pins the compact format's hot path: Issue
// allocates the token's text and nothing else; Verify the Claims and one
// string their text fields share. Tokens are built, decoded and opened in
// stack buffers (envelope.AppendSeal, AppendOpen).
func TestCompactAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation moves buffers to the heap")
	}
	s := service(t, keyring(t, nil, secretA), nil)
	c := typical(token.URL)
	tok, _ := issue(t, s, c, token.Compact)
	want := token.Expect{Kind: token.URL, SessionID: c.SessionID, Subject: c.Subject}
	issueAllocs := testing.AllocsPerRun(200, func() {
		c := typical(token.URL)
		if _, err := s.Issue(&c, 0, token.Compact); err != nil {
			t.Fatal(err)
		}
	})
	verifyAllocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Verify(tok, want); err != nil {
			t.Fatal(err)
		}
	})
	if issueAllocs > 1 || verifyAllocs > 2 {
		t.Errorf("compact: Issue %.1f allocations (want 1), Verify %.1f (want 2)", issueAllocs, verifyAllocs)
	}
}

// TestIssueTimes pins the times Issue sets to what time.Time's own
// arithmetic gives, field for field (==, not Equal: no monotonic reading,
// the clock's location), and Verify's to the same instants.
func TestIssueTimes(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, now := range []time.Time{
		time.Now(), // with a monotonic reading
		time.Now().UTC(),
		time.Date(2026, 11, 27, 12, 0, 0, 999_999_999, time.UTC),
		time.Date(2026, 11, 27, 12, 0, 0, 0, zone),
		time.Date(2026, 11, 27, 12, 0, 59, 1, time.Local),
	} {
		clk := &clock{t: now}
		s := service(t, keyring(t, clk, secretA), nil)
		for _, ttl := range []time.Duration{0, time.Second, 90*time.Second + 500*time.Millisecond, token.MaxTTL} {
			c := typical(token.URL)
			tok, err := s.Issue(&c, ttl, token.Compact)
			if err != nil {
				t.Fatal(err)
			}
			if ttl == 0 {
				ttl = token.URL.DefaultTTL()
			}
			issued := now.Truncate(time.Second)
			if expiry := issued.Add(ttl.Truncate(time.Second)); c.IssuedAt != issued || c.Expiry != expiry {
				t.Errorf("now %v, ttl %v: issued %#v, expiry %#v; want %#v, %#v", now, ttl, c.IssuedAt, c.Expiry, issued, expiry)
			}
			got, err := s.Verify(tok, token.Expect{Kind: token.URL})
			if err != nil {
				t.Fatal(err)
			}
			if !got.IssuedAt.Equal(c.IssuedAt) || !got.Expiry.Equal(c.Expiry) {
				t.Errorf("now %v, ttl %v: verified %v, %v; issued %v, %v", now, ttl, got.IssuedAt, got.Expiry, c.IssuedAt, c.Expiry)
			}
		}
	}
}

package oauth_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/oidctest"
)

// revocations answers the provider's revocation endpoint itself: 503
// while down is set, else 200, recording the tokens it was asked to
// revoke. Everything else goes to the provider.
type revocations struct {
	url  string
	down atomic.Bool
	mu   sync.Mutex
	got  []string
}

func (rv *revocations) RoundTrip(r *http.Request) (*http.Response, error) {
	if rv.url == "" || !strings.HasPrefix(r.URL.String(), rv.url) {
		return http.DefaultTransport.RoundTrip(r)
	}
	r.ParseForm()
	status := http.StatusOK
	if rv.down.Load() {
		status = http.StatusServiceUnavailable
	} else {
		rv.mu.Lock()
		rv.got = append(rv.got, r.PostForm.Get("token"))
		rv.mu.Unlock()
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
}

// TestKeptRevocationsBounded: five disconnects whose revocation the
// provider does not confirm keep at most four tokens, sealed; the next
// Connect revokes the kept ones before asking the user again, and a
// Disconnect afterwards has nothing left to revoke. Before, no token was
// kept: nothing was ever revoked again.
func TestKeptRevocationsBounded(t *testing.T) {
	rv := &revocations{}
	e := newEnvClient(t, 1, time.Hour, nil, &http.Client{Transport: rv})
	rv.url = e.prov.Metadata.RevocationEndpoint
	rv.down.Store(true)
	ctx := context.Background()
	c := e.connect(0, "alice", legacy)
	var tokens []string
	for i := range 5 {
		tok := "refresh-token-" + strings.Repeat(string(rune('a'+i)), 20)
		tokens = append(tokens, tok)
		if err := e.nodes[0].conn.Save(ctx, "alice", "op", &oauth2.Token{AccessToken: "at", RefreshToken: tok, Expiry: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if got := wait(t, c.call("disconnect"), "disconnect"); !strings.Contains(got, "revocation") {
			t.Fatalf("disconnect %d without the provider: %q", i, got)
		}
	}
	for cursor := ""; ; {
		entries, next, err := e.store.Scan(ctx, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			for _, tok := range tokens {
				if bytes.Contains(en.Value, []byte(tok)) {
					t.Fatal("a kept token is in the store in clear")
				}
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	rv.down.Store(false)
	res := c.call("whoami")
	link := wait(t, c.links, "the link")
	rv.mu.Lock()
	got := append([]string(nil), rv.got...)
	rv.mu.Unlock()
	if len(got) != 4 {
		t.Errorf("Connect revoked %d kept tokens, want 4 (the bound)", len(got))
	}
	for _, g := range got {
		if g == tokens[3] {
			t.Errorf("the fourth token was kept although the fifth took its slot")
		}
	}
	if code, body := oidctest.SignIn(t, link, "alice-account", false); code != http.StatusOK || !strings.Contains(body, "Account connected") {
		t.Fatalf("sign-in: %d", code)
	}
	if got := wait(t, res, "the tool"); got != "sub:alice-account" {
		t.Fatalf("tool: %q", got)
	}
	if got := wait(t, c.call("disconnect"), "disconnect"); got != "disconnected" {
		t.Fatalf("disconnect: %q", got)
	}
	if got := wait(t, c.call("disconnect"), "disconnect"); !strings.Contains(got, oauth.ErrNotConnected.Error()) {
		t.Errorf("a last disconnect: %q", got)
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.got) != 5 {
		t.Errorf("%d revocations in all, want 5", len(rv.got))
	}
}

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/oidctest"
	"github.com/elicitvault/elicitvault/store"
)

// providerNet is one node's network to the provider: it records the
// tokens the provider issues, can hold the answers to refresh grants until
// the test releases them, and can drop revocation requests.
type providerNet struct {
	tokenURL, revokeURL string
	hold                atomic.Pointer[chan struct{}]
	refreshes           atomic.Int32 // refresh grants sent
	revokeDown          atomic.Bool

	mu     sync.Mutex
	issued []oauth2.Token // access and refresh tokens the provider sent
}

func (n *providerNet) RoundTrip(r *http.Request) (*http.Response, error) {
	u := r.URL.String()
	if strings.HasPrefix(u, n.revokeURL) && n.revokeDown.Load() {
		return nil, errors.New("dial tcp: connect: connection refused")
	}
	if !strings.HasPrefix(u, n.tokenURL) {
		return http.DefaultTransport.RoundTrip(r)
	}
	refresh := bytes.Contains(peek(&r.Body), []byte("grant_type=refresh_token"))
	if refresh {
		n.refreshes.Add(1)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	rb := peek(&resp.Body)
	var t struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if json.Unmarshal(rb, &t) == nil && t.AccessToken != "" {
		n.mu.Lock()
		n.issued = append(n.issued, oauth2.Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken})
		n.mu.Unlock()
	}
	if g := n.hold.Load(); g != nil && refresh {
		<-*g // the provider answered; the answer is late
	}
	return resp, nil
}

func (n *providerNet) last() oauth2.Token {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.issued) == 0 {
		return oauth2.Token{}
	}
	return n.issued[len(n.issued)-1]
}

type vaultNode struct {
	conn *oauth.Connector
	net  *providerNet
	cs   *mcp.ClientSession
}

type vaultEnv struct {
	prov  *oidctest.Provider
	cfg   *oauth2.Config
	st    store.Store
	nodes []*vaultNode
}

const vaultUser = "vault-user"

// newVaultEnv starts node-oidc-provider (access tokens of 10 s: refreshed
// at every use) and two nodes, each with its own Redis client on one
// prefix, connected as vaultUser, and connects the account through node 0.
func newVaultEnv(t *testing.T, lease time.Duration) *vaultEnv {
	t.Helper()
	raw := serverURL(t, redisEnv)
	prefix, _ := redisPrefix(t, raw, "evvault")
	keys := keysA(t)
	web := httptest.NewServer(nil)
	t.Cleanup(web.Close)
	redirect := web.URL + "/oauth/callback"
	e := &vaultEnv{}
	e.prov = oidctest.Start(t, 10*time.Second, oidctest.Client{ID: "vault-client", Secret: "vault client secret", RedirectURI: redirect})
	e.cfg = &oauth2.Config{ClientID: "vault-client", ClientSecret: "vault client secret", Endpoint: e.prov.Endpoint(),
		RedirectURL: redirect, Scopes: []string{"openid", "offline_access"}}
	for i := range 2 {
		st := mustOpen(t, "redis", raw, prefix)
		if i == 0 {
			e.st = st
		}
		ev, err := elicit.New(keys, st, &elicit.Config{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		pn := &providerNet{tokenURL: e.prov.Metadata.TokenEndpoint, revokeURL: e.prov.Metadata.RevocationEndpoint}
		conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: web.URL + "/oauth/start",
			HTTPClient: &http.Client{Transport: pn}, RefreshLease: lease}, &oauth.Provider{
			Name: "op", Config: e.cfg, Issuer: e.prov.Issuer, RequireIssuer: true,
			RevocationURL: e.prov.Metadata.RevocationEndpoint,
			AuthOptions:   []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "consent")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			web.Config.Handler = conn.Handler()
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		addTextTool(s, "connect", func(ctx context.Context) (string, error) {
			if _, err := conn.Connect(ctx, "op"); err != nil {
				return "", err
			}
			return "connected", nil
		})
		addTextTool(s, "disconnect", func(ctx context.Context) (string, error) {
			if err := conn.Disconnect(ctx, "op"); err != nil {
				return "", err
			}
			return "disconnected", nil
		})
		links := make(chan string, 1)
		cs := connectAs(t, s, fmt.Sprintf("vault-session-%d", i), vaultUser, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				links <- req.Params.URL
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		e.nodes = append(e.nodes, &vaultNode{conn: conn, net: pn, cs: cs})
		if i == 0 {
			done := make(chan error, 1)
			go func() {
				_, err := callTool(cs, "connect")
				done <- err
			}()
			select {
			case link := <-links:
				if code, body := oidctest.SignIn(t, link, "vault-account", false); code != http.StatusOK || !strings.Contains(body, "Account connected") {
					t.Fatalf("sign-in: %d", code)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("no link")
			}
			if err := <-done; err != nil {
				t.Fatalf("connect: %v", err)
			}
		}
	}
	return e
}

// token runs node i's token source in the background.
func (e *vaultEnv) token(i int) <-chan tokenResult {
	out := make(chan tokenResult, 1)
	go func() {
		c, err := e.nodes[i].conn.Stored(context.Background(), vaultUser, "op")
		if err != nil {
			out <- tokenResult{nil, err}
			return
		}
		t, err := c.TokenSource.Token()
		out <- tokenResult{t, err}
	}()
	return out
}

type tokenResult struct {
	t   *oauth2.Token
	err error
}

// dead checks at the provider that t's refresh token no longer refreshes
// and its access token no longer reads the user's info.
func (e *vaultEnv) dead(t *testing.T, what string, tok oauth2.Token) {
	t.Helper()
	if tok.RefreshToken == "" {
		t.Fatalf("%s: no token recorded", what)
	}
	if _, err := e.prov.Subject(t.Context(), e.cfg.Client(t.Context(), &oauth2.Token{AccessToken: tok.AccessToken, Expiry: time.Now().Add(time.Hour)})); err == nil {
		t.Errorf("%s: its access token still works at the provider", what)
	}
	if _, err := e.cfg.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Errorf("%s: its refresh token still works at the provider", what)
	}
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOAuthDisconnectIsFinal (issue 20, 6): node B's refresh is in flight
// (the provider answered; the answer is held) when node A disconnects.
// When Disconnect returns, neither node reads a credential, and the
// tokens the provider gave node B are revoked: B found the credential gone
// and revoked what it got instead of storing it, and Disconnect waited
// for it. Before, B stored a new credential after Disconnect returned,
// and node A then read a live access token.
func TestOAuthDisconnectIsFinal(t *testing.T) {
	e := newVaultEnv(t, 0)
	a, b := e.nodes[0], e.nodes[1]
	gate := make(chan struct{})
	b.net.hold.Store(&gate)
	resB := e.token(1)
	until(t, "node B's refresh", func() bool { return b.net.refreshes.Load() == 1 })
	doneA := make(chan error, 1)
	go func() {
		_, err := callTool(a.cs, "disconnect")
		doneA <- err
	}()
	until(t, "node A to take the credential", func() bool {
		_, err := a.conn.Stored(t.Context(), vaultUser, "op")
		return errors.Is(err, oauth.ErrNotConnected)
	})
	close(gate)
	if err := <-doneA; err != nil {
		t.Fatalf("disconnect: %v", err)
	}
	for i, n := range e.nodes {
		if c, err := n.conn.Stored(t.Context(), vaultUser, "op"); !errors.Is(err, oauth.ErrNotConnected) {
			tok, terr := c.TokenSource.Token()
			t.Errorf("node %d after Disconnect: a credential (%v), token error %v, live %v", i, err, terr, tok != nil && tok.AccessToken != "")
		}
	}
	if r := <-resB; !errors.Is(r.err, oauth.ErrNotConnected) {
		t.Errorf("node B's refresh after Disconnect: %v", r.err)
	}
	e.dead(t, "node B's refreshed credential", b.net.last())
}

// TestOAuthSlowRefresh (issue 20, 7): the provider's answer to node A's
// refresh is held for three leases of the refresh lock. Node A renews its
// lease meanwhile; node B waits for A's result and never sends the
// rotating refresh token itself; the provider sees one refresh and no
// reuse. Before, the lock ran out, node B sent the same refresh token, and
// the provider revoked the grant.
func TestOAuthSlowRefresh(t *testing.T) {
	const lease = 600 * time.Millisecond
	e := newVaultEnv(t, lease)
	a, b := e.nodes[0], e.nodes[1]
	gate := make(chan struct{})
	a.net.hold.Store(&gate)
	resA := e.token(0)
	until(t, "node A's refresh", func() bool { return a.net.refreshes.Load() == 1 })
	resB := e.token(1)
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if b.net.refreshes.Load() != 0 {
			break
		}
	}
	if n := b.net.refreshes.Load(); n != 0 {
		t.Errorf("node B sent the refresh token while node A's refresh was in flight (%d times)", n)
	}
	close(gate)
	ra, rb := <-resA, <-resB
	if ra.err != nil || rb.err != nil {
		t.Fatalf("tokens: A %v, B %v", ra.err, rb.err)
	}
	if ra.t.AccessToken != rb.t.AccessToken {
		t.Errorf("the nodes hold different access tokens")
	}
	if n := e.prov.Count("grant.success", "refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1: %v", n, e.prov.Events())
	}
	if n := e.prov.Count("grant.error", ""); n != 0 {
		t.Errorf("grant errors: %v", e.prov.Events())
	}
	if _, err := e.prov.Subject(t.Context(), e.cfg.Client(t.Context(), ra.t)); err != nil {
		t.Errorf("the refreshed access token: %v", err)
	}
}

// TestOAuthRevocationKept (issue 20, 8): the provider's revocation
// endpoint cannot be reached when node A disconnects. Disconnect says so,
// and keeps the refresh token sealed (it is nowhere in the store in
// clear); the next Disconnect, on node B, revokes it, and the provider
// refuses the token afterwards. Before, the token was deleted with the
// credential and never revoked: the second Disconnect was "not connected"
// and the grant stayed live at the provider.
func TestOAuthRevocationKept(t *testing.T) {
	e := newVaultEnv(t, 0)
	a := e.nodes[0]
	tok := a.net.last()
	a.net.revokeDown.Store(true)
	if _, err := callTool(a.cs, "disconnect"); err == nil || !strings.Contains(err.Error(), "revocation") {
		t.Fatalf("disconnect without the provider: %v", err)
	}
	if _, err := a.conn.Stored(t.Context(), vaultUser, "op"); !errors.Is(err, oauth.ErrNotConnected) {
		t.Fatalf("after the failed revocation: %v", err)
	}
	for cursor := ""; ; {
		entries, next, err := e.st.Scan(t.Context(), cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if bytes.Contains(en.Value, []byte(tok.RefreshToken)) || bytes.Contains(en.Value, []byte(tok.AccessToken)) {
				t.Fatal("a token is in the store in clear")
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if n := e.prov.Count("grant.revoked", ""); n != 0 {
		t.Fatalf("revoked already: %v", e.prov.Events())
	}
	if got, err := callTool(e.nodes[1].cs, "disconnect"); err != nil || got != "disconnected" {
		t.Fatalf("the second Disconnect: %q, %v", got, err)
	}
	if n := e.prov.WaitCount("grant.revoked", "", 1); n == 0 {
		t.Errorf("no revocation at the provider: %v", e.prov.Events())
	}
	e.dead(t, "the disconnected credential", tok)
	if _, err := callTool(e.nodes[1].cs, "disconnect"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("a third Disconnect: %v", err)
	}
}

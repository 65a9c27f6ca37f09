package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/oidctest"
	"github.com/elicitvault/elicitvault/internal/testclock"
	"github.com/elicitvault/elicitvault/internal/webdriver"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

const (
	legacy = "2025-11-25"
	mrtr   = "" // the go-sdk's default, 2026-07-28
)

func forBoth(t *testing.T, f func(t *testing.T, version string)) {
	t.Run("2025-11-25", func(t *testing.T) { f(t, legacy) })
	t.Run("2026-07-28", func(t *testing.T) { f(t, mrtr) })
}

// web is an HTTP server whose handler is set after it has a URL.
type web struct {
	*httptest.Server
	h atomic.Pointer[http.Handler]
}

func newWeb(t *testing.T) *web {
	w := &web{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h := w.h.Load(); h != nil {
			(*h).ServeHTTP(rw, r)
			return
		}
		http.NotFound(rw, r)
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *web) set(h http.Handler) { w.h.Store(&h) }

// node is one server process: an Elicitor, a Connector and an MCP server
// with the tool "whoami", which connects the account and asks the
// provider's userinfo endpoint who the token belongs to.
type node struct {
	ev     *elicit.Elicitor
	conn   *oauth.Connector
	server *mcp.Server
	web    *web
}

type env struct {
	t     *testing.T
	prov  *oidctest.Provider
	store store.Store
	keys  *keyring.Keyring
	clock *testclock.Clock // every node's (Config.Clock)
	nodes []*node
	user  func(*http.Request) (string, bool)
	// hold, when set, receives the URL of a callback instead of the
	// Connector (to replay it as someone else).
	hold atomic.Pointer[chan string]
}

const clientSecret = "interop client secret"

// newEnv starts a provider and n nodes sharing one store and keyring. The
// start page is on node 0 and the callback on node n-1.
func newEnv(t *testing.T, n int, accessTTL time.Duration, user func(*http.Request) (string, bool)) *env {
	t.Helper()
	return newEnvClient(t, n, accessTTL, user, nil)
}

// newEnvClient is newEnv with the nodes talking to the provider through hc.
func newEnvClient(t *testing.T, n int, accessTTL time.Duration, user func(*http.Request) (string, bool), hc *http.Client) *env {
	t.Helper()
	e := &env{t: t, store: memory.New(nil), user: user, clock: new(testclock.Clock)}
	t.Cleanup(func() { e.store.Close() })
	k, err := keyring.New([]byte("oauth test secret, thirty-two bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	e.keys = k
	webs := make([]*web, n)
	for i := range webs {
		webs[i] = newWeb(t)
	}
	redirect := webs[n-1].URL + "/oauth/callback"
	e.prov = oidctest.Start(t, accessTTL, oidctest.Client{ID: "elicitvault", Secret: clientSecret, RedirectURI: redirect})
	if !e.prov.Metadata.IssParameterSupported || e.prov.Metadata.RevocationEndpoint == "" {
		t.Fatalf("provider metadata: %+v", e.prov.Metadata)
	}
	for i := range n {
		// The clock is the Elicitor's, and so its Connector's.
		ev, err := elicit.New(k, e.store, &elicit.Config{TTL: time.Minute, Clock: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		p := &oauth.Provider{
			Name: "op",
			Config: &oauth2.Config{
				ClientID: "elicitvault", ClientSecret: clientSecret, Endpoint: e.prov.Endpoint(),
				RedirectURL: redirect, Scopes: []string{"openid", "offline_access"},
			},
			Issuer:        e.prov.Issuer,
			RequireIssuer: true,
			RevocationURL: e.prov.Metadata.RevocationEndpoint,
			AuthOptions:   []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "consent")},
		}
		// other is never contacted: its callback must refuse op's states.
		other := &oauth.Provider{Name: "other", Config: &oauth2.Config{ClientID: "x", Endpoint: e.prov.Endpoint(), RedirectURL: webs[n-1].URL + "/oauth/other/callback"}}
		conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: webs[0].URL + "/oauth/start", User: user, HTTPClient: hc}, p, other)
		if err != nil {
			t.Fatal(err)
		}
		nd := &node{ev: ev, conn: conn, web: webs[i]}
		h := conn.Handler()
		webs[i].set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold := e.hold.Load(); hold != nil && r.URL.Path == "/oauth/callback" {
				*hold <- r.URL.String()
				fmt.Fprint(w, "<title>held</title>")
				return
			}
			h.ServeHTTP(w, r)
		}))
		nd.server = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		ev.Install(nd.server)
		// whoami answers the provider's subject of the person's
		// connection, connecting with opts first.
		whoami := func(opts ...elicit.Option) mcp.ToolHandlerFor[struct{}, any] {
			return func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				c, err := conn.Connect(ctx, "op", opts...)
				if err != nil {
					return nil, nil, err
				}
				sub, err := e.prov.Subject(ctx, oauth2.NewClient(ctx, c.TokenSource))
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub:" + sub}}}, nil, nil
			}
		}
		mcp.AddTool(nd.server, &mcp.Tool{Name: "whoami"}, whoami())
		mcp.AddTool(nd.server, &mcp.Tool{Name: "whoami_later"}, whoami(elicit.WithURLElicitationRequiredError()))
		mcp.AddTool(nd.server, &mcp.Tool{Name: "disconnect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := conn.Disconnect(ctx, "op"); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "disconnected"}}}, nil, nil
		})
		e.nodes = append(e.nodes, nd)
	}
	return e
}

// client is an MCP client of one node, authenticated as user, that sends
// every URL it is asked to open to links.
type client struct {
	cs    *mcp.ClientSession
	links chan string
	asked atomic.Int32
}

func (e *env) connect(n int, user, version string) *client {
	e.t.Helper()
	c := &client{links: make(chan string, 4)}
	ctx := context.Background()
	srv := e.nodes[n].server
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ctr, ok := req.(*mcp.CallToolRequest); ok && user != "" {
				ctr.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}}
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ss.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.asked.Add(1)
			c.links <- req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := mc.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// call calls a tool in the background.
func (c *client) call(name string) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		if err != nil {
			out <- "protocol error: " + err.Error()
			return
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			out <- "error: " + b.String()
			return
		}
		out <- b.String()
	}()
	return out
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return fronttest.Recv(t, ch, what)
}

// title is the page's title once the page has one of ours (#title).
func title(t *testing.T, wd *webdriver.Driver) string {
	t.Helper()
	wd.WaitFor("#title")
	return wd.Text("#title")
}

// signIn is the person's part at the provider: the link, the login form
// (or its Cancel link, when deny), the consent page.
func signIn(t *testing.T, wd *webdriver.Driver, link, login string, deny bool) {
	t.Helper()
	wd.Navigate(link)
	wd.WaitFor(`input[name=login]`)
	if deny {
		wd.Click(`a[href$="/abort"]`)
		return
	}
	wd.TypeInto(`input[name=login]`, login)
	wd.TypeInto(`input[name=password]`, "any password")
	wd.Click(`button[type=submit]`)
	wd.WaitFor(`input[name=prompt][value=consent]`)
	wd.Click(`button[type=submit]`)
}

func TestConnect(t *testing.T) {
	wd := webdriver.Start(t)
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, 1, time.Hour, nil)
		c := e.connect(0, "alice", version)
		res := c.call("whoami")
		link := wait(t, c.links, "the link")
		u, _ := url.Parse(link)
		if len(u.Query()) != 1 || !strings.HasPrefix(u.Query().Get("state"), "ev2.") || strings.Contains(link, "alice") {
			t.Fatalf("the link carries more than a state token: %s", link)
		}
		signIn(t, wd, link, "alice-account", false)
		if got := title(t, wd); got != "Account connected" {
			t.Fatalf("callback page %q", got)
		}
		if got := wait(t, res, "the tool"); got != "sub:alice-account" {
			t.Fatalf("tool: %q", got)
		}
		// Connected: the next call uses the stored credential at once.
		if got := wait(t, c.call("whoami"), "the tool"); got != "sub:alice-account" || c.asked.Load() != 1 {
			t.Fatalf("second call: %q after %d elicitations", got, c.asked.Load())
		}
		if n := e.prov.Count("grant.success", "authorization_code"); n != 1 {
			t.Errorf("%d code exchanges", n)
		}

		// Replayed: the callback URL again, in the same browser.
		cb := wd.Exec(`return location.href`).(string)
		wd.Navigate(cb)
		if got := title(t, wd); got != "Link already used" {
			t.Errorf("replayed callback: %q", got)
		}
		// Tampered: one character of the state changed.
		cu, _ := url.Parse(cb)
		q := cu.Query()
		st := []byte(q.Get("state"))
		st[len(st)/2] ^= 1
		q.Set("state", string(st))
		cu.RawQuery = q.Encode()
		wd.Navigate(cu.String())
		if got := title(t, wd); got != "Invalid link" {
			t.Errorf("tampered state: %q", got)
		}
		// The start link again: the provider answers at once (signed in,
		// consented), the state is spent.
		wd.Navigate(link)
		wd.WaitFor(`input[name=prompt][value=consent]`)
		wd.Click(`button[type=submit]`)
		if got := title(t, wd); got != "Link already used" {
			t.Errorf("replayed start link: %q", got)
		}
		if n := e.prov.Count("grant.success", "authorization_code"); n != 1 {
			t.Errorf("%d code exchanges after the replays", n)
		}

		// Disconnect revokes at the provider; the next call asks again.
		if got := wait(t, c.call("disconnect"), "disconnect"); got != "disconnected" {
			t.Fatalf("disconnect: %q", got)
		}
		if n := e.prov.WaitCount("grant.revoked", "", 1); n == 0 {
			t.Errorf("no revocation at the provider: %v", e.prov.Events())
		}
		res = c.call("whoami")
		wd.Navigate(wait(t, c.links, "a new link"))
		wd.WaitFor(`input[name=prompt][value=consent]`) // still signed in at the provider
		wd.Click(`button[type=submit]`)
		if got := title(t, wd); got != "Account connected" {
			t.Fatalf("callback page %q", got)
		}
		if got := wait(t, res, "the tool"); got != "sub:alice-account" || c.asked.Load() != 2 {
			t.Errorf("after Disconnect: %q, %d elicitations", got, c.asked.Load())
		}
	})
}

// unreachable is a network between the nodes and the provider's token
// endpoint that drops every request while down is set, and holds each
// until gate is closed while gate is set.
type unreachable struct {
	down    atomic.Bool
	dropped atomic.Int32
	gate    atomic.Pointer[chan struct{}]
	held    atomic.Int32
	token   string // the token endpoint
}

func (u *unreachable) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.String(), u.token) {
		if u.down.Load() {
			u.dropped.Add(1)
			return nil, errors.New("dial tcp: connect: connection refused")
		}
		if g := u.gate.Load(); g != nil {
			u.held.Add(1)
			<-*g
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestCallbackProviderUnreachable: a callback whose code exchange gets no
// answer from the provider gives the state back, so reloading it once
// the provider is reachable again connects the account (the code was
// never spent). Before, the state was used up first and the elicitation
// cancelled, and the reload said the link was used. Two reloads at once
// exchange the code once: the second is told the first is in progress.
func TestCallbackProviderUnreachable(t *testing.T) {
	wd := webdriver.Start(t)
	forBoth(t, func(t *testing.T, version string) {
		net := &unreachable{}
		e := newEnvClient(t, 1, time.Hour, nil, &http.Client{Transport: net})
		net.token = e.prov.Endpoint().TokenURL
		net.down.Store(true)
		c := e.connect(0, "alice", version)
		res := c.call("whoami")
		signIn(t, wd, wait(t, c.links, "the link"), "alice-account", false)
		if got := title(t, wd); got != "Try again" || !strings.Contains(wd.Text("#text"), "Reload") || net.dropped.Load() == 0 {
			t.Fatalf("callback with the provider unreachable: %q %q (%d requests dropped)", got, wd.Text("#text"), net.dropped.Load())
		}
		select {
		case got := <-res:
			t.Fatalf("the tool ended while the callback could still complete: %q", got)
		case <-time.After(300 * time.Millisecond):
		}
		net.down.Store(false)
		gate := make(chan struct{})
		net.gate.Store(&gate)
		var opened sync.Once
		open := func() { opened.Do(func() { close(gate) }) }
		t.Cleanup(open) // a failed test must not leave a request held
		// Two reloads at once, with the browser's cookies.
		cb := wd.Exec(`return location.href`).(string)
		cookies := wd.Cookies()
		statuses := make(chan int, 2)
		for range 2 {
			go func() {
				req, _ := http.NewRequest(http.MethodGet, cb, nil)
				for _, ck := range cookies {
					req.AddCookie(ck)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					statuses <- 0
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
					t.Logf("callback: %d %s", resp.StatusCode, b)
				}
				statuses <- resp.StatusCode
			}()
		}
		if got := wait(t, statuses, "the first callback"); got != http.StatusConflict {
			t.Fatalf("the second of two callbacks at once: %d, want 409 (in progress)", got)
		}
		// The callback that claimed the state may not have reached the
		// provider yet when the other one is refused: wait for its code
		// exchange (held at the gate), then make sure it is the only one.
		for deadline := time.Now().Add(10 * time.Second); net.held.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if n := net.held.Load(); n != 1 {
			t.Fatalf("%d code exchanges started, want 1", n)
		}
		open()
		if got := wait(t, statuses, "the other callback"); got != http.StatusOK {
			t.Fatalf("the first of two callbacks at once: %d, want 200", got)
		}
		net.gate.Store(nil)
		if got := wait(t, res, "the tool"); got != "sub:alice-account" {
			t.Fatalf("tool: %q", got)
		}
		// Used up now.
		wd.Navigate(wd.Exec(`return location.href`).(string))
		if got := title(t, wd); got != "Link already used" {
			t.Errorf("the callback again: %q", got)
		}
		wd.Navigate(wd.Exec(`return location.href`).(string))
		if got := title(t, wd); got != "Link already used" {
			t.Errorf("the callback a third time: %q", got)
		}
		if n := e.prov.Count("grant.success", "authorization_code"); n != 1 {
			t.Errorf("%d code exchanges", n)
		}
	})
}

func TestDeny(t *testing.T) {
	wd := webdriver.Start(t)
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, 1, time.Hour, nil)
		c := e.connect(0, "alice", version)
		res := c.call("whoami")
		signIn(t, wd, wait(t, c.links, "the link"), "", true)
		if got := title(t, wd); got != "Not connected" {
			t.Fatalf("callback page %q", got)
		}
		got := wait(t, res, "the tool")
		if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "access_denied") {
			t.Fatalf("tool: %q", got)
		}
	})
}

// TestDeniedIsDeclined checks the error a tool gets for a denial.
func TestDeniedIsDeclined(t *testing.T) {
	err := error(&oauth.ProviderError{Provider: "op", Code: "access_denied"})
	if !errors.Is(err, oauth.ErrDeclined) || errors.Is(&oauth.ProviderError{Code: "invalid_grant"}, oauth.ErrDeclined) {
		t.Fatal("access_denied must match ErrDeclined, and only it")
	}
}

func TestRefresh(t *testing.T) {
	wd := webdriver.Start(t)
	// Access tokens live 13 s and are refreshed 10 s before expiry: each
	// is good for about 3 s.
	e := newEnv(t, 2, 13*time.Second, nil)
	a := e.connect(0, "alice", legacy)
	res := a.call("whoami")
	signIn(t, wd, wait(t, a.links, "the link"), "alice-account", false)
	if got := wait(t, res, "the tool"); got != "sub:alice-account" {
		t.Fatalf("tool: %q", got)
	}
	if n := e.prov.Count("grant.success", "refresh_token"); n != 0 {
		t.Fatalf("%d refreshes already", n)
	}
	// Past the refresh point on the nodes' clock (the provider's stays on
	// the wall clock: the refresh token is still good).
	e.clock.Advance(3500 * time.Millisecond)

	// Both nodes, three calls each, at once, after expiry: one refresh
	// (the refresh token rotates: a second use would be refused and
	// revoke the grant).
	b := e.connect(1, "alice", mrtr)
	var wg sync.WaitGroup
	results := make(chan string, 6)
	for range 3 {
		for _, c := range []*client{a, b} {
			wg.Go(func() { results <- <-c.call("whoami") })
		}
	}
	wg.Wait()
	close(results)
	for got := range results {
		if got != "sub:alice-account" {
			t.Errorf("after expiry: %q", got)
		}
	}
	if n := e.prov.Count("grant.success", "refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1 (events %v)", n, e.prov.Events())
	}
	if n := e.prov.Count("grant.error", ""); n != 0 {
		t.Errorf("%d grant errors: %v", n, e.prov.Events())
	}
	// The refreshed token is judged on the clock that judged the old one:
	// a later call uses it, without a second refresh.
	if got := <-b.call("whoami"); got != "sub:alice-account" {
		t.Errorf("after the refresh: %q", got)
	}
	if n := e.prov.Count("grant.success", "refresh_token"); n != 1 {
		t.Errorf("%d refreshes after a later call, want still 1", n)
	}
	if a.asked.Load() != 1 || b.asked.Load() != 0 {
		t.Errorf("elicitations: %d, %d", a.asked.Load(), b.asked.Load())
	}
}

// TestCallbackOtherUserOrBrowser: a server that authenticates users in the
// browser. The callback URL, replayed by another user or in another
// browser, is refused and leaves the elicitation alone; the browser that
// started the flow then finishes it.
func TestCallbackOtherUserOrBrowser(t *testing.T) {
	wd := webdriver.Start(t)
	user := func(r *http.Request) (string, bool) {
		c, err := r.Cookie("user")
		if err != nil {
			return "", false
		}
		return c.Value, true
	}
	e := newEnv(t, 2, time.Hour, user)
	hold := make(chan string, 1)
	e.hold.Store(&hold)
	c := e.connect(0, "alice", legacy)
	res := c.call("whoami")
	link := wait(t, c.links, "the link")
	for _, nd := range e.nodes {
		wd.Navigate(nd.web.URL + "/")
		wd.Exec(`document.cookie = "user=alice; path=/"`)
	}
	signIn(t, wd, link, "alice-account", false)
	cb := wait(t, hold, "the callback")
	e.hold.Store(nil)
	full := e.nodes[1].web.URL + cb

	get := func(cookies ...*http.Cookie) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, full, nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	if code, body := get(&http.Cookie{Name: "user", Value: "mallory"}); code != http.StatusForbidden || !strings.Contains(body, "Wrong account") {
		t.Errorf("another user: %d %s", code, body)
	}
	if code, body := get(&http.Cookie{Name: "user", Value: "alice"}); code != http.StatusForbidden || !strings.Contains(body, "Wrong browser") {
		t.Errorf("another browser: %d %s", code, body)
	}
	select {
	case got := <-res:
		t.Fatalf("the elicitation ended: %q", got)
	case <-time.After(200 * time.Millisecond):
	}
	wd.Navigate(full)
	if got := title(t, wd); got != "Account connected" {
		t.Fatalf("callback page %q", got)
	}
	if got := wait(t, res, "the tool"); got != "sub:alice-account" {
		t.Fatalf("tool: %q", got)
	}
	// The start link opened by another user is refused too.
	wd.Exec(`document.cookie = "user=mallory; path=/"`)
	wd.Navigate(link)
	if got := title(t, wd); got != "Wrong account" {
		t.Errorf("start page for another user: %q", got)
	}
}

// TestCallbackChecks: the start page's redirect and cookie, and what the
// callback refuses from the right browser: a state of another provider
// (left alone), a response of another issuer (RFC 9207) and a provider
// error (both end the elicitation as an error the tool sees).
func TestCallbackChecks(t *testing.T) {
	e := newEnv(t, 1, time.Hour, nil)
	base := e.nodes[0].web.URL
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string, ck *http.Cookie) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if ck != nil {
			req.AddCookie(ck)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 8192)
		n, _ := io.ReadFull(resp.Body, b)
		return resp.StatusCode, string(b[:n])
	}
	for _, tc := range []struct {
		query, want string
	}{
		{"code=abc&iss=" + url.QueryEscape("http://127.0.0.1:1"), "invalid_issuer"},
		{"code=abc", "invalid_issuer"}, // RequireIssuer: no iss
		{"error=invalid_scope&iss=ISS", "invalid_scope"},
		{"iss=ISS", "invalid_request"}, // neither code nor error
		{"code=not-a-code&iss=ISS", "invalid_grant"},
	} {
		c := e.connect(0, "alice", legacy)
		res := c.call("whoami")
		link := wait(t, c.links, "the link")
		resp, err := noFollow.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		q := loc.Query()
		lq, _ := url.Parse(link)
		state := lq.Query().Get("state")
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), e.prov.Metadata.AuthorizationEndpoint) ||
			q.Get("state") != state || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
			q.Get("client_id") != "elicitvault" || q.Get("response_type") != "code" {
			t.Fatalf("start page: %d %s", resp.StatusCode, loc)
		}
		cks := resp.Cookies()
		if len(cks) != 1 || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteLaxMode || cks[0].Path != "/oauth/callback" ||
			cks[0].Secure || cks[0].MaxAge <= 0 || cks[0].MaxAge > 61 {
			t.Fatalf("cookie: %+v", cks)
		}
		ck := &http.Cookie{Name: cks[0].Name, Value: cks[0].Value}
		if code, body := get(base+"/oauth/other/callback?code=abc&state="+url.QueryEscape(state), ck); code != http.StatusBadRequest || !strings.Contains(body, "Invalid link") {
			t.Fatalf("state at another provider's callback: %d %s", code, body)
		}
		query := strings.ReplaceAll(tc.query, "ISS", url.QueryEscape(e.prov.Issuer))
		if code, body := get(base+"/oauth/callback?"+query+"&state="+url.QueryEscape(state), ck); code != http.StatusBadGateway || !strings.Contains(body, "Connection failed") {
			t.Fatalf("%s: %d %s", tc.query, code, body)
		}
		if got := wait(t, res, "the tool"); !strings.HasPrefix(got, "error: ") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: tool %q, want %s", tc.query, got, tc.want)
		}
		if code, body := get(base+"/oauth/callback?code=abc&iss="+url.QueryEscape(e.prov.Issuer)+"&state="+url.QueryEscape(state), ck); code != http.StatusBadRequest || !strings.Contains(body, "already used") {
			t.Errorf("%s: the state again: %d %s", tc.query, code, body)
		}
	}
	if n := e.prov.Count("grant.success", ""); n != 0 {
		t.Errorf("%d grants", n)
	}
}

// TestAnonymousSession: a server without authentication (here in-memory
// sessions, as stdio) binds a credential to the MCP session: the session
// that connected finds it again, another session does not.
func TestAnonymousSession(t *testing.T) {
	e := newEnv(t, 1, time.Hour, nil)
	a := e.connect(0, "", legacy)
	res := a.call("whoami")
	if status, body := oidctest.SignIn(t, wait(t, a.links, "the link"), "anon-account", false); status != http.StatusOK || !strings.Contains(body, "Account connected") {
		t.Fatalf("callback page: %d %s", status, body)
	}
	if got := wait(t, res, "the tool"); got != "sub:anon-account" {
		t.Fatalf("tool: %q", got)
	}
	if got := wait(t, a.call("whoami"), "the tool"); got != "sub:anon-account" || a.asked.Load() != 1 {
		t.Fatalf("same session: %q after %d elicitations", got, a.asked.Load())
	}
	b := e.connect(0, "", legacy)
	res = b.call("whoami")
	if status, body := oidctest.SignIn(t, wait(t, b.links, "another session's link"), "anon-account-2", false); status != http.StatusOK || !strings.Contains(body, "Account connected") {
		t.Fatalf("callback page: %d %s", status, body)
	}
	if got := wait(t, res, "the tool"); got != "sub:anon-account-2" {
		t.Fatalf("another session: %q", got)
	}
	if got := wait(t, a.call("whoami"), "the tool"); got != "sub:anon-account" {
		t.Fatalf("the first session after the second connected: %q", got)
	}
}

// TestURLRequiredError: with elicit.WithURLElicitationRequiredError the
// call fails with -32042 carrying the link; once the account is connected
// the retry has it. After Disconnect the same call asks again (the earlier
// completion of the same call does not pass for a connection).
func TestURLRequiredError(t *testing.T) {
	e := newEnv(t, 1, time.Hour, nil)
	c := e.connect(0, "alice", legacy)
	link := func() string {
		t.Helper()
		_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami_later"})
		return fronttest.URLRequired(t, err).URL
	}
	for round, account := range []string{"alice-account", "alice-account-2"} {
		if status, body := oidctest.SignIn(t, link(), account, false); status != http.StatusOK || !strings.Contains(body, "Account connected") {
			t.Fatalf("round %d: callback page: %d %s", round, status, body)
		}
		if got := wait(t, c.call("whoami_later"), "the retry"); got != "sub:"+account {
			t.Fatalf("round %d: retry: %q", round, got)
		}
		if got := wait(t, c.call("disconnect"), "disconnect"); got != "disconnected" {
			t.Fatalf("round %d: disconnect: %q", round, got)
		}
	}
}

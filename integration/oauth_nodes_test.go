package integration

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/testclock"
	"github.com/elicitvault/elicitvault/internal/webdriver"
)

// TestOAuthAcrossNodesRedis: two nodes, each with its own Redis client,
// one start page and one callback. The person, in headless Chromium, opens
// the link node A sent, signs in and consents at the provider, and lands
// on node B's callback, which completes node A's waiting call. After the
// access token expires, three calls on each node at once refresh it once:
// the Redis lock lets one node spend the rotating refresh token.
func TestOAuthAcrossNodesRedis(t *testing.T) {
	raw := serverURL(t, redisEnv)
	wd := webdriver.Start(t)
	prefix, _ := redisPrefix(t, raw, "evoauth")
	// The nodes' clock, which the test moves past the refresh point (the
	// provider and Redis keep the wall clock).
	clock := new(testclock.Clock)
	keys := keysA(t)
	// Access tokens of 13 s, refreshed 10 s before expiry: good for 3 s.
	start, callback, redirect, prov := oauthSites(t, 13*time.Second, "nodes-client", "nodes client secret")
	var servers []*mcp.Server
	for _, web := range []*httptest.Server{start, callback} {
		st := mustOpen(t, "redis", raw, prefix)
		ev, err := elicit.New(keys, st, &elicit.Config{TTL: time.Minute, Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: start.URL + "/oauth/start"}, &oauth.Provider{
			Name: "op",
			Config: &oauth2.Config{ClientID: "nodes-client", ClientSecret: "nodes client secret", Endpoint: prov.Endpoint(),
				RedirectURL: redirect, Scopes: []string{"openid", "offline_access"}},
			Issuer: prov.Issuer, RequireIssuer: true,
			AuthOptions: []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "consent")},
		})
		if err != nil {
			t.Fatal(err)
		}
		web.Config.Handler = conn.Handler()
		servers = append(servers, whoamiServer(ev, conn, "op", prov))
	}

	links := make(chan string, 1)
	urlCaps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	a := connectAs(t, servers[0], "nodes-session-a", "nodes-user", &mcp.ClientOptions{
		Capabilities: urlCaps,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			links <- req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	done := callLater(a, "whoami")
	link := nextLink(t, links)
	wd.Navigate(link)
	wd.WaitFor(`input[name=login]`)
	wd.TypeInto(`input[name=login]`, "nodes-account")
	wd.TypeInto(`input[name=password]`, "any password")
	wd.Click(`button[type=submit]`)
	wd.WaitFor(`input[name=prompt][value=consent]`)
	wd.Click(`button[type=submit]`)
	wd.WaitFor(`#title`)
	if got := wd.Text("#title"); got != "Account connected" {
		t.Fatalf("callback page: %q", got)
	}
	select {
	case got := <-done:
		if got != "sub:nodes-account" {
			t.Fatalf("node A's call: %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("node B's callback did not complete node A's call")
	}

	clock.Advance(3500 * time.Millisecond)
	b := connectAs(t, servers[1], "nodes-session-b", "nodes-user", &mcp.ClientOptions{})
	var wg sync.WaitGroup
	results := make(chan string, 6)
	for range 3 {
		for _, cs := range []*mcp.ClientSession{a, b} {
			wg.Go(func() { results <- <-callLater(cs, "whoami") })
		}
	}
	wg.Wait()
	close(results)
	for got := range results {
		if got != "sub:nodes-account" {
			t.Errorf("after expiry: %q", got)
		}
	}
	if n := prov.Count("grant.success", "refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1: %v", n, prov.Events())
	}
	if n := prov.Count("grant.error", ""); n != 0 {
		t.Errorf("grant errors: %v", prov.Events())
	}
}

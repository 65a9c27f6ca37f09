package integration

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/internal/oidctest"
)

// TestServeOAuth runs `elicitvault serve --oauth-issuer` against a real
// OpenID Provider: connect_account connects the account (the person's
// part signs in and consents), the next call finds it connected without
// asking, disconnect_account revokes it. Without a provider the tool says
// it is a demonstration.
func TestServeOAuth(t *testing.T) { serveOAuth(t) }

// TestServeSDKMCPGoOAuth: the same on serve --sdk mcp-go: elicit/oauth's
// Connect in an mcp-go tool.
func TestServeSDKMCPGoOAuth(t *testing.T) { serveOAuth(t, "--sdk", "mcp-go") }

func serveOAuth(t *testing.T, args ...string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	prov := oidctest.Start(t, time.Hour, oidctest.Client{ID: "serve-client", Secret: "serve client secret 41c9", RedirectURI: "http://" + addr + "/oauth/callback"})
	srv := startServe(t, []string{"ELICITVAULT_OAUTH_CLIENT_ID=serve-client", "ELICITVAULT_OAUTH_CLIENT_SECRET=serve client secret 41c9"},
		append([]string{"--addr", addr, "--oauth-issuer", prov.Issuer, "--oauth-provider", "acme", "--oauth-scopes", "openid"}, args...)...)
	if strings.Contains(srv.log(), "demonstration") {
		t.Errorf("serve says it has no provider:\n%s", srv.log())
	}
	c := newGoClient(t)
	links := make(chan string, 2)
	c.answer(&mcp.ElicitResult{Action: "accept"})
	c.setVisit(func(u string) { links <- u })
	cs := c.connect(srv.mcpURL(), "2025-11-25")
	done := callLater(cs, "connect_account")
	link := nextLink(t, links)
	if !strings.HasPrefix(link, srv.base+"/oauth/start?state=ev2.") {
		t.Fatalf("link %s", link)
	}
	status, body := oidctest.SignIn(t, link, "serve-account-1", false)
	if status != http.StatusOK || !strings.Contains(body, "Account connected") {
		t.Fatalf("callback page: %d %s", status, body)
	}
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "Your acme account is connected") {
			t.Fatalf("connect_account: %q", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("connect_account did not return")
	}
	if got, err := callTool(cs, "connect_account"); err != nil || !strings.HasPrefix(got, "Your acme account is connected") || len(c.elicitations()) != 1 {
		t.Fatalf("again: %q, %v, %d elicitations", got, err, len(c.elicitations()))
	}
	if got, err := callTool(cs, "disconnect_account"); err != nil || !strings.Contains(got, "revoked") {
		t.Fatalf("disconnect_account: %q, %v", got, err)
	}
	if prov.WaitCount("grant.revoked", "", 1) != 1 {
		t.Errorf("no revocation at the provider: %v", prov.Events())
	}

	// Without a provider: the demonstration page, and it says so.
	demo := startServe(t, nil, args...)
	if !strings.Contains(demo.log(), "no OAuth provider configured") {
		t.Errorf("serve without a provider does not say so:\n%s", demo.log())
	}
	dc := newGoClient(t).connect(demo.mcpURL(), "2025-11-25")
	tools, err := dc.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "connect_account" && !strings.Contains(tl.Description, "demonstration") {
			t.Errorf("connect_account without a provider: %q", tl.Description)
		}
		if tl.Name == "disconnect_account" {
			t.Error("disconnect_account listed without a provider")
		}
	}
}

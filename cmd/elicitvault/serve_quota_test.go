package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// setHeader sets a request header, as a reverse proxy would.
type setHeader struct{ name, value string }

func (h setHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// --trusted-proxies: behind a proxy (all clients from one address), an
// anonymous client that fills its pending quota leaves another client,
// told apart by the X-Forwarded-For the proxy sets, its question (the
// same client as the session caps count), on either SDK.
func TestServeTrustedProxiesPendingQuota(t *testing.T) {
	for _, sdk := range []string{sdkGo, sdkMCPGo} {
		t.Run(sdk, func(t *testing.T) { trustedProxiesPendingQuota(t, sdk) })
	}
}

func trustedProxiesPendingQuota(t *testing.T, sdk string) {
	k, err := keyring.New([]byte("serve quota test secret, 32 bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	r, err := newReference(k, st, &referenceOptions{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, SDK: sdk,
		HTTP: elicit.HandlerOptions{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ev.Close() })
	hs := httptest.NewServer(r.handler())
	t.Cleanup(hs.Close)
	ask := func(cs *mcp.ClientSession) string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "subscribe_newsletter"})
		switch {
		case err != nil:
			return err.Error()
		case res.Meta["elicitationPending"] != nil:
			return "asked"
		}
		return "tool error"
	}
	as := func(addr string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL + elicit.MCPPath, HTTPClient: &http.Client{Transport: setHeader{"X-Forwarded-For", addr}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := as("198.51.100.1"), as("198.51.100.2")
	for i := range 100 { // the default Config.MaxPendingPerSubject
		if got := ask(a); got != "asked" {
			t.Fatalf("client A's call %d: %s", i, got)
		}
	}
	if got := ask(a); !strings.Contains(got, elicit.ErrTooManyPending.Error()) {
		t.Errorf("client A beyond its quota: %s", got)
	}
	if got := ask(b); got != "asked" {
		t.Errorf("client B: %s", got)
	}
}

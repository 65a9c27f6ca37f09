package integration

import (
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMixedSDKNodes runs a go-sdk node and an mcp-go node (`serve` and
// `serve --sdk mcp-go`) with one secret over one store, Redis and then
// PostgreSQL: one deployment. A URL-mode elicitation asked on either is
// answered through the other's consent page, and the call that waits on
// the first gets the answer through the store.
func TestMixedSDKNodes(t *testing.T) {
	eachMixedPair(t, "evmixed", func(t *testing.T, ask, ans *serveProc) {
		urlAcrossNodes(t, ask, ans, "2025-11-25")
	})
}

// eachMixedPair runs f on a go-sdk node and an mcp-go node with one secret
// over one store (a Redis namespace, then a PostgreSQL schema, named
// after prefix), both ways: ask is the node the client calls, ans the
// other.
func eachMixedPair(t *testing.T, prefix string, f func(t *testing.T, ask, ans *serveProc)) {
	for _, backend := range []struct {
		name  string
		store func(t *testing.T) string
	}{
		{"redis", func(t *testing.T) string { return redisStoreURL(t, prefix) }},
		{"postgres", func(t *testing.T) string { return postgresSchemaURL(t, prefix+"_") }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			storeURL := backend.store(t)
			gosdk := startServe(t, nil, "--store", storeURL)
			mcpgo := startServe(t, nil, "--store", storeURL, "--sdk", "mcp-go")
			for _, tc := range []struct {
				name     string
				ask, ans *serveProc
			}{
				{"asked on mcp-go, answered on go-sdk", mcpgo, gosdk},
				{"asked on go-sdk, answered on mcp-go", gosdk, mcpgo},
			} {
				t.Run(tc.name, func(t *testing.T) { f(t, tc.ask, tc.ans) })
			}
		})
	}
}

// onNode returns raw, a link to a's consent page, with b's origin: the
// browser is sent to b.
func onNode(t *testing.T, raw string, a, b *serveProc) string {
	t.Helper()
	v, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(raw, a.base+"/elicit/consent?") {
		t.Fatalf("the link %q is not the asking node's consent page", raw)
	}
	bu, _ := url.Parse(b.base)
	v.Host = bu.Host
	return v.String()
}

// urlAcrossNodes calls connect_account on a with a go-sdk client of
// version whose user's browser opens the link on b: the call must complete
// and b's consent page and callback answer 200. It returns the session and
// the elicitation, complete.
func urlAcrossNodes(t *testing.T, a, b *serveProc, version string) (*mcp.ClientSession, *mcp.ElicitParams) {
	t.Helper()
	c := newGoClient(t)
	cs := c.connect(a.mcpURL(), version)
	statuses := make(chan [2]int, 1)
	c.setVisit(func(u string) {
		p, cb := browse(t, onNode(t, u, a, b), "")
		statuses <- [2]int{p, cb}
	})
	c.answer(&mcp.ElicitResult{Action: "accept"})
	out, isErr, err := callText(t.Context(), cs, "connect_account", nil)
	if err != nil || isErr || out != "Your Example account is connected." {
		t.Fatalf("got %q (error %v, %v)", out, isErr, err)
	}
	if s := <-statuses; s != [2]int{200, 200} {
		t.Errorf("the other node's consent page and callback answered %v", s)
	}
	asked := c.elicitations()
	el := asked[len(asked)-1]
	c.waitComplete(el.ElicitationID)
	return cs, el
}

package integration

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeTwoNodesRedis runs two `elicitvault serve` processes, A and B,
// over one Redis store (a key prefix of their own) with one secret. A
// go-sdk client connects to A and calls connect_account; the user's
// browser opens the consent page and posts the callback to B. B verifies
// and consumes the token, checks it against the sealed pending record and
// resolves it through Redis; A, waiting, sends
// notifications/elicitation/complete and the tool result. On both
// protocol paths, and with -32042.
func TestServeTwoNodesRedis(t *testing.T) {
	storeURL := redisStoreURL(t, "evserve")

	a := startServe(t, nil, "--store", storeURL)
	b := startServe(t, nil, "--store", storeURL)
	if a.base == b.base {
		t.Fatal("both servers listen on one address")
	}
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			urlAcrossNodes(t, a, b, v.version)
		})
	}

	t.Run("url-required", func(t *testing.T) {
		c := newGoClient(t)
		cs := c.connect(a.mcpURL(), "2025-11-25")
		args := map[string]any{"url_required_error": true}
		_, _, err := callText(t.Context(), cs, "connect_account", args)
		if errCode(err) != mcp.CodeURLElicitationRequired {
			t.Fatalf("got %v, want -32042", err)
		}
		var data struct {
			Elicitations []*mcp.ElicitParams `json:"elicitations"`
		}
		if json.Unmarshal(errData(err), &data) != nil || len(data.Elicitations) != 1 {
			t.Fatalf("-32042 data: %s", errData(err))
		}
		el := data.Elicitations[0]
		if p, cb := browse(t, onNode(t, el.URL, a, b), ""); p != 200 || cb != 200 {
			t.Fatalf("B's consent page %d, callback %d", p, cb)
		}
		c.waitComplete(el.ElicitationID)
		out, isErr, err := callText(t.Context(), cs, "connect_account", args)
		if err != nil || isErr || out != "Your Example account is connected." {
			t.Fatalf("retry: got %q (error %v, %v)", out, isErr, err)
		}
	})
}

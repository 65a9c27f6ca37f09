package integration

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
	"github.com/elicitvault/elicitvault/internal/fronttest"
)

// The requestState of 2026-07-28 as a client that does not play along
// sends it, over raw HTTP: serve --sdk mcp-go answers a tampered, a
// replayed, and another call's requestState with JSON-RPC -32602, and
// one deployment of a go-sdk node and an mcp-go node continues a round
// begun on either on the other.

// rawReply is a JSON-RPC response to a tools/call of 2026-07-28.
type rawReply struct {
	result map[string]any
	err    *fronttest.Error
}

func (r *rawReply) code() int {
	if r.err != nil {
		return r.err.Code
	}
	return 0
}

// state is the requestState of r.
func (r *rawReply) state() string {
	s, _ := r.result["requestState"].(string)
	return s
}

// key is the key of the one input request of r.
func (r *rawReply) key(t *testing.T) string {
	t.Helper()
	reqs, _ := r.result["inputRequests"].(map[string]any)
	if r.result["resultType"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("not an input-required result: %+v", r)
	}
	for k := range reqs {
		return k
	}
	return ""
}

func (r *rawReply) text() string {
	content, _ := r.result["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// callModern sends a tools/call of 2026-07-28 to the MCP endpoint of p,
// from a client that can elicit forms.
func callModern(t *testing.T, p *serveProc, tool string, args map[string]any, state string, responses map[string]any) *rawReply {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = responses
	}
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	res, rerr := fronttest.Call(t, p.mcpURL(), "raw", "tools/call", params, caps)
	return &rawReply{res, rerr}
}

var yes = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}

func TestServeSDKMCPGoRequestState(t *testing.T) {
	srv := startServe(t, nil, "--sdk", "mcp-go")
	args := map[string]any{"count": 3}
	ask := func() (string, string) {
		r := callModern(t, srv, "delete_contacts", args, "", nil)
		return r.state(), r.key(t)
	}
	state, key := ask()
	if r := callModern(t, srv, "delete_contacts", args, state, map[string]any{key: yes}); r.text() != "Deleted 3 contacts." {
		t.Fatalf("the round: %+v", r)
	}
	tampered := func() (string, string) {
		s, k := ask()
		b := []byte(s)
		b[len(b)-2] ^= 1
		return string(b), k
	}
	for _, tc := range []struct {
		name  string
		tool  string
		args  map[string]any
		state func() (string, string)
	}{
		{"replayed", "delete_contacts", args, func() (string, string) { return state, key }},
		{"tampered", "delete_contacts", args, tampered},
		{"another tool's", "subscribe_newsletter", nil, ask},
		{"other arguments'", "delete_contacts", map[string]any{"count": 4}, ask},
	} {
		s, k := tc.state()
		if r := callModern(t, srv, tc.tool, tc.args, s, map[string]any{k: yes}); r.code() != -32602 {
			t.Errorf("%s requestState: %+v, want -32602", tc.name, r)
		}
	}
}

// TestMixedSDKNodesRound: a 2026-07-28 round begun on one node and
// continued on the other, both ways, over one Redis and one PostgreSQL
// store.
func TestMixedSDKNodesRound(t *testing.T) {
	eachMixedPair(t, "evmixedround", func(t *testing.T, ask, ans *serveProc) {
		args := map[string]any{"count": 5}
		r := callModern(t, ask, "delete_contacts", args, "", nil)
		state, key := r.state(), r.key(t)
		if r := callModern(t, ans, "delete_contacts", args, state, map[string]any{key: yes}); r.text() != "Deleted 5 contacts." {
			t.Fatalf("continued on the other node: %+v", r)
		}
		// Used: neither node takes it again.
		for _, p := range []*serveProc{ask, ans} {
			if r := callModern(t, p, "delete_contacts", args, state, map[string]any{key: yes}); r.code() != -32602 {
				t.Errorf("replayed: %+v, want -32602", r)
			}
		}
	})
}

// TestMixedSDKNodesRotate: `elicitvault rotate` rewraps the records a
// go-sdk node and an mcp-go node left in one Redis store: one format.
func TestMixedSDKNodesRotate(t *testing.T) {
	storeURL := redisStoreURL(t, "evmixedrot")
	// No commas: MCP_ELICITATION_SECRET_PREVIOUS is a list.
	oldSecret := "the secret of the mixed deployment and 32 bytes or more"
	newSecret := "the next secret of the mixed deployment and 32 bytes or more"
	env := []string{"MCP_ELICITATION_SECRET=" + oldSecret}
	gosdk := startServe(t, env, "--store", storeURL)
	mcpgo := startServe(t, env, "--store", storeURL, "--sdk", "mcp-go")
	rotate := func(t *testing.T) string {
		t.Helper()
		cmd := exec.Command(servebin.Path(t), "rotate", "--store", storeURL)
		cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+newSecret, "MCP_ELICITATION_SECRET_PREVIOUS="+oldSecret)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("rotate: %v\n%s", err, out)
		}
		return string(out)
	}
	rewrapped := regexp.MustCompile(`rewrapped (\d+) records to key ID \S+; 0 failed`)
	for _, p := range []*serveProc{gosdk, mcpgo} {
		// A URL-mode elicitation left pending (-32042): its records stay.
		c := newGoClient(t)
		cs := c.connect(p.mcpURL(), "2025-11-25")
		if _, _, err := callText(t.Context(), cs, "connect_account", map[string]any{"url_required_error": true}); errCode(err) != -32042 {
			t.Fatalf("want -32042, got %v", err)
		}
		out := rotate(t)
		m := rewrapped.FindStringSubmatch(out)
		if m == nil || m[1] == "0" {
			t.Fatalf("rotate after a call on %s: %s", p.base, out)
		}
	}
}

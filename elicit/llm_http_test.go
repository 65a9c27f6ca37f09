package elicit_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// The LLM-mediated answer may land on another node: two stateless
// Streamable HTTP servers (2026-07-28) share a store, requests alternate
// between them. The elicitation is bound to the authenticated user: the
// answer of another user is refused; the user's own continues the tool on
// the other node.
func TestModelAcrossNodesAndUsers(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	keys := newKeyring(t)
	var runs [2]atomic.Int32
	var nodes [2]http.Handler
	for i := range nodes {
		ev, err := elicit.New(keys, st, llmConfig)
		if err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		e := &env{t: t, store: st, keys: keys, ev: ev, server: s}
		e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			runs[i].Add(1)
			return profileTool(ctx, req)
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		nodes[i] = auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
			if user, ok := strings.CutPrefix(tok, "user-"); ok {
				return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
			}
			return nil, auth.ErrInvalidToken
		}, nil)(h)
	}
	// Answers go to node 1, everything else to node 0.
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		node := 0
		if bytes.Contains(body, []byte(elicit.FallbackTool)) {
			node = 1
		}
		nodes[node].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	connect := func(user string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint:   lb.URL,
			HTTPClient: &http.Client{Transport: &bearer{"user-" + user, http.DefaultTransport}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("alice"), connect("bob")

	p := pendingOf(t, callTool(t, alice, "profile", nil))
	res := submit(t, bob, p.ID, "accept", map[string]any{"name": "Bob", "email": "bob@example.com"})
	if !res.IsError || !strings.Contains(text(res), elicit.ErrUnknownElicitation.Error()) {
		t.Fatalf("another user's answer: %q (error %v)", text(res), res.IsError)
	}
	res = submit(t, alice, p.ID, "accept", map[string]any{"name": "Alice", "email": "alice@example.com"})
	if res.IsError || !strings.HasPrefix(text(res), "accept {Name:Alice") {
		t.Fatalf("alice: %q (error %v)", text(res), res.IsError)
	}
	if runs[0].Load() != 1 || runs[1].Load() != 1 {
		t.Errorf("runs per node %d, %d: want the call on node 0 and its continuation on node 1", runs[0].Load(), runs[1].Load())
	}
}

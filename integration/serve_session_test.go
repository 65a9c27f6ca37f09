package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/elicitvault/elicitvault/keyring"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeSessionBinding: over Streamable HTTP with real session IDs
// (2025-11-25), a URL-mode completion belongs to the session that asked.
// Session A's -32042 elicitation completes in the browser; session B,
// calling the same tool with the same arguments, is not answered by it
// (it is asked anew), while A's retry is.
func TestServeSessionBinding(t *testing.T) {
	srv := startServe(t, nil)
	ctx := t.Context()
	args := map[string]any{"url_required_error": true}
	ask := func(cs *mcp.ClientSession) *mcp.ElicitParams {
		t.Helper()
		_, _, err := callText(ctx, cs, "connect_account", args)
		var data struct {
			Elicitations []*mcp.ElicitParams `json:"elicitations"`
		}
		if errCode(err) != mcp.CodeURLElicitationRequired || json.Unmarshal(errData(err), &data) != nil || len(data.Elicitations) != 1 {
			t.Fatalf("got %v, want -32042 with one elicitation", err)
		}
		return data.Elicitations[0]
	}
	a, b := newGoClient(t), newGoClient(t)
	csA := a.connect(srv.mcpURL(), "2025-11-25")
	csB := b.connect(srv.mcpURL(), "2025-11-25")
	if csA.ID() == "" || csB.ID() == "" || csA.ID() == csB.ID() {
		t.Fatalf("session IDs %q and %q: want two real ones", csA.ID(), csB.ID())
	}

	elA := ask(csA)
	if p, cb := browse(t, elA.URL, ""); p != 200 || cb != 200 {
		t.Fatalf("consent page %d, callback %d", p, cb)
	}
	a.waitComplete(elA.ElicitationID)

	// B makes the same call: A's completion is not B's answer.
	elB := ask(csB)
	if elB.ElicitationID == elA.ElicitationID {
		t.Fatal("session B was handed session A's elicitation")
	}
	select {
	case id := <-b.complete:
		t.Fatalf("session B was notified of %q", id)
	case <-time.After(100 * time.Millisecond):
	}
	// A's link is used up, in any browser.
	if p, _ := browse(t, elA.URL, ""); p != http.StatusGone {
		t.Errorf("A's link again: consent page %d, want 410", p)
	}
	if out, isErr, err := callText(ctx, csA, "connect_account", args); err != nil || isErr || out != "Your Example account is connected." {
		t.Fatalf("A's retry: got %q (error %v, %v)", out, isErr, err)
	}
}

// subjectServer is an elicit server behind the go-sdk's bearer-token
// middleware, whose test verifier makes the token the user ID, with
// serve's routing (2026-07-28 stateless, older versions stateful) and a
// callback that knows the browser's user from the same token.
type subjectServer struct {
	url      string // the MCP endpoint
	callback string
}

func newSubjectServer(t *testing.T) *subjectServer {
	t.Helper()
	keys, err := ring.New([]byte(serveSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	ev, err := elicit.New((*keyring.Keyring)(keys), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &subjectServer{}
	server := mcp.NewServer(&mcp.Implementation{Name: "subjects", Version: "1"}, nil)
	ev.Install(server)
	mcp.AddTool(server, &mcp.Tool{Name: "set"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, fmt.Sprintf("Set %d?", in.N))
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ok)}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := elicit.URL(ctx, "Connect", elicit.WithLink(callbackLink(s.callback)))
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(a)}}}, nil, nil
	})

	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != "alice" && tok != "bob" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tok, Expiration: time.Now().Add(time.Hour)}, nil
	}
	get := func(*http.Request) *mcp.Server { return server }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})))
	mux.Handle("/callback", ev.Pages(func(r *http.Request) (string, bool) {
		u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return u, ok && u != ""
	}))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s.url, s.callback = hs.URL+"/mcp", hs.URL+"/callback"
	return s
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (s *subjectServer) connect(t *testing.T, user, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: user, Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   s.url,
		HTTPClient: &http.Client{Transport: bearer{user, http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestSubjectBinding: with users authenticated by the go-sdk's bearer
// middleware (TokenInfo.UserID), answers bound to one user are refused for
// another: a requestState of alice's 2026-07-28 call presented by bob, a
// callback of alice's URL-mode elicitation opened by bob's browser, and a
// post into alice's session with bob's token.
func TestSubjectBinding(t *testing.T) {
	s := newSubjectServer(t)
	ctx := t.Context()

	t.Run("requestState", func(t *testing.T) {
		manual := &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		}
		alice := s.connect(t, "alice", "", manual)
		bob := s.connect(t, "bob", "", manual)
		if v := alice.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		first, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}})
		if err != nil || !first.NeedsInput() || first.RequestState == "" {
			t.Fatalf("first round: %+v, %v", first, err)
		}
		yes := mcp.InputResponseMap{}
		for k := range first.InputRequests {
			yes[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
		}
		retry := &mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}, RequestState: first.RequestState, InputResponses: yes}

		res, err := bob.CallTool(ctx, retry)
		if errCode(err) != jsonrpc.CodeInvalidParams {
			t.Fatalf("bob with alice's requestState: %+v, %v; want the JSON-RPC error -32602", res, err)
		}
		// Bob's attempt did not use it up: alice's own retry goes through.
		res, err = alice.CallTool(ctx, retry)
		if err != nil || res.IsError || fronttest.Text(res) != "true" {
			t.Fatalf("alice's retry: %+v, %v", res, err)
		}
		// And once only.
		res, err = alice.CallTool(ctx, retry)
		if errCode(err) != jsonrpc.CodeInvalidParams {
			t.Fatalf("alice's second retry: %+v, %v; want the JSON-RPC error -32602", res, err)
		}
	})

	t.Run("callback", func(t *testing.T) {
		links := make(chan string, 1)
		alice := s.connect(t, "alice", "2025-11-25", &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				links <- req.Params.URL
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		if alice.ID() == "" {
			t.Fatal("no session ID")
		}
		done := make(chan string, 1)
		go func() {
			out, _, err := callText(ctx, alice, "connect", nil)
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
		link := <-links
		open := func(user string) int {
			req, _ := http.NewRequest(http.MethodPost, link, nil)
			req.Header.Set("Authorization", "Bearer "+user)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := open("bob"); code != http.StatusForbidden {
			t.Errorf("bob's browser: %d, want 403", code)
		}
		select {
		case out := <-done:
			t.Fatalf("the call ended after bob's callback: %q", out)
		case <-time.After(100 * time.Millisecond):
		}
		if code := open("alice"); code != http.StatusOK {
			t.Errorf("alice's browser: %d, want 200", code)
		}
		if out := <-done; out != "accept" {
			t.Errorf("got %q", out)
		}
	})

	t.Run("session", func(t *testing.T) {
		alice := s.connect(t, "alice", "2025-11-25", nil)
		body := `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bob")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", alice.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("bob posting into alice's session: %d, want a refusal", resp.StatusCode)
		}
	})
}

// callbackLink builds the link of a URL-mode elicitation for elicit.WithLink:
// base (a URL without a query) with the token in its query parameter
// "token", as the tests' callback pages read it.
func callbackLink(base string) func(string) string {
	return func(tok string) string { return base + "?token=" + url.QueryEscape(tok) }
}

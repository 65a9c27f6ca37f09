package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// probe is what the probe tool saw of its call.
type probe struct {
	Who       engine.Identity
	Protocol  string
	Form, URL bool
	Claimed   bool
	State     string
}

type subjectKey struct{}

// newProbe returns a front-end on a new mcp-go server with the tool
// "probe", which reports its call, and "other", and commits a claimed
// requestState as a handler that received its answer does.
func newProbe(t *testing.T) (*Server, chan probe) {
	t.Helper()
	keys, err := keyring.New([]byte("test secret that is at least 32 bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	m := server.NewMCPServer("test", "1", server.WithToolCapabilities(false))
	f := New(ev, m, &Options{Subject: func(ctx context.Context) string {
		s, _ := ctx.Value(subjectKey{}).(string)
		return s
	}})
	seen := make(chan probe, 16)
	h := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := engine.PeerFrom(ctx)
		if p == nil {
			return nil, errNoSession
		}
		c := p.Call()
		pr := probe{Who: c.Who, Protocol: c.Protocol, Form: c.FormMode, URL: c.URLMode, State: req.Params.RequestState}
		if cl := heldClaim(ctx); cl != nil {
			pr.Claimed = true
			if _, use := cl.take(); use != nil {
				if err := use.Commit(ctx); err != nil {
					return nil, err
				}
			}
		}
		seen <- pr
		return mcp.NewToolResultText("ok"), nil
	}
	m.AddTool(mcp.NewTool("probe"), h)
	m.AddTool(mcp.NewTool("other"), h)
	return f, seen
}

// recv returns what the probe saw next.
func recv(t *testing.T, seen chan probe) probe {
	t.Helper()
	select {
	case p := <-seen:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not run")
	}
	return probe{}
}

// issue seals a requestState for the call who to tool with args.
func issue(t *testing.T, f *Server, who engine.Identity, tool, args string) string {
	t.Helper()
	b, err := engine.BindState(who, tool, []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.eng.IssueState(b, engine.RandomID(), []byte(`{}`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// modernCall is a tools/call of 2026-07-28 over Streamable HTTP.
func modernCall(tool, args, state string) []byte {
	params := map[string]any{
		"name":      tool,
		"arguments": json.RawMessage(args),
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		},
	}
	if state != "" {
		params["requestState"] = state
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	return b
}

// post sends a 2026-07-28 tools/call as user and returns the JSON-RPC
// error code (0 for a result).
func post(t *testing.T, url, user, tool, args, state string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+elicit.MCPPath, bytes.NewReader(modernCall(tool, args, state)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set("X-User", user)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body = body[i+len("data: "):]
	}
	var msg struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(body), &msg); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	if msg.Error != nil {
		return msg.Error.Code
	}
	return 0
}

// withUser is an authentication stand-in: the X-User header is the user.
func withUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, r.Header.Get("X-User"))))
	})
}

func TestRequestStateCheckHTTP(t *testing.T) {
	f, seen := newProbe(t)
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	alice := engine.Identity{Subject: "alice", Session: engine.Sessionless}
	args := `{"n":1}`

	// A requestState issued for the call passes, claimed, once.
	good := issue(t, f, alice, "probe", args)
	if code := post(t, srv.URL, "alice", "probe", args, good); code != 0 {
		t.Fatalf("valid requestState: error %d", code)
	}
	if p := recv(t, seen); !p.Claimed || p.Who != alice || p.Protocol != mcp.ProtocolVersion20260728 || !p.Form || p.URL {
		t.Fatalf("the handler saw %+v", p)
	}

	tampered := []byte(issue(t, f, alice, "probe", args))
	tampered[len(tampered)-3] ^= 1
	for _, tc := range []struct {
		name, user, tool, args, state string
	}{
		{"replayed", "alice", "probe", args, good},
		{"tampered", "alice", "probe", args, string(tampered)},
		{"another user's", "mallory", "probe", args, issue(t, f, alice, "probe", args)},
		{"another tool's", "alice", "other", args, issue(t, f, alice, "probe", args)},
		{"other arguments'", "alice", "probe", `{"n":2}`, issue(t, f, alice, "probe", args)},
		{"a session's", "alice", "probe", args, issue(t, f, engine.Identity{Subject: "alice", Session: engine.TransportSession("abc")}, "probe", args)},
		{"not JSON arguments'", "alice", "probe", `[1]`, issue(t, f, alice, "probe", args)},
	} {
		if code := post(t, srv.URL, tc.user, tc.tool, tc.args, tc.state); code != mcp.INVALID_PARAMS {
			t.Errorf("%s requestState: error %d, want %d", tc.name, code, mcp.INVALID_PARAMS)
		}
	}
	select {
	case p := <-seen:
		t.Fatalf("a refused call ran its handler: %+v", p)
	default:
	}

	// Someone else's requestState is not elicitvault's to check: it
	// reaches the handler, unclaimed.
	if code := post(t, srv.URL, "alice", "probe", args, "theirs"); code != 0 {
		t.Fatalf("foreign requestState: error %d", code)
	}
	if p := recv(t, seen); p.Claimed || p.State != "theirs" {
		t.Fatalf("the handler saw %+v", p)
	}
}

// A claim the handler does not commit (its answer never reached it) is
// given back: the client may send the requestState again.
func TestRequestStateReleased(t *testing.T) {
	f, seen := newProbe(t)
	f.m.AddTool(mcp.NewTool("fails"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		seen <- probe{Claimed: heldClaim(ctx) != nil}
		return nil, io.ErrUnexpectedEOF
	})
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	who := engine.Identity{Subject: "alice", Session: engine.Sessionless}
	state := issue(t, f, who, "fails", `{}`)
	for range 2 {
		post(t, srv.URL, "alice", "fails", `{}`, state)
		if p := recv(t, seen); !p.Claimed {
			t.Fatal("the handler ran without the claim")
		}
	}
}

// An mcp-go server served without Handler runs no check: a requestState
// of elicitvault's reaching the handler unchecked is refused.
func TestRequestStateUnchecked(t *testing.T) {
	f, seen := newProbe(t)
	srv := httptest.NewServer(withUser(server.NewStreamableHTTPServer(f.m, server.WithEndpointPath(elicit.MCPPath))))
	defer srv.Close()
	who := engine.Identity{Subject: "alice", Session: engine.Sessionless}
	if code := post(t, srv.URL, "alice", "probe", `{}`, issue(t, f, who, "probe", `{}`)); code == 0 {
		t.Fatalf("an unchecked requestState reached the handler: %+v", recv(t, seen))
	}
}

func TestRequestStateCheckStdio(t *testing.T) {
	f, seen := newProbe(t)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), subjectKey{}, "alice"))
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.ServeStdio(ctx, inR, outW) }()
	lines := make(chan string, 16)
	go func() {
		buf := make([]byte, 0, 64<<10)
		tmp := make([]byte, 4096)
		for {
			n, err := outR.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				lines <- string(buf[:i])
				buf = buf[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	send := func(msg []byte) string {
		inW.Write(append(msg, '\n'))
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return ""
	}
	// The connection's session is known to the first call only.
	first := send(modernCall("probe", `{}`, ""))
	if strings.Contains(first, `"error"`) {
		t.Fatalf("first call: %s", first)
	}
	p := recv(t, seen)
	if p.Who.Subject != "alice" || !p.Who.HasSession() {
		t.Fatalf("identity %+v", p.Who)
	}
	good := issue(t, f, p.Who, "probe", `{}`)
	if l := send(modernCall("probe", `{}`, good)); strings.Contains(l, `"error"`) {
		t.Fatalf("valid requestState: %s", l)
	}
	if p := recv(t, seen); !p.Claimed {
		t.Fatal("the handler ran without the claim")
	}
	for name, state := range map[string]string{
		"replayed":    good,
		"sessionless": issue(t, f, engine.Identity{Subject: "alice", Session: engine.Sessionless}, "probe", `{}`),
	} {
		if l := send(modernCall("probe", `{}`, state)); !strings.Contains(l, `"code":-32602`) {
			t.Errorf("%s requestState: %s", name, l)
		}
	}
	inW.Close()
	if err := <-done; err != nil && err != context.Canceled {
		t.Logf("ServeStdio: %v", err)
	}
}

// A stateful session of 2025-11-25 binds state to its transport session
// ID; the capabilities are the session's, from initialize.
func TestIdentityStatefulSession(t *testing.T) {
	f, seen := newProbe(t)
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	tr, err := transport.NewStreamableHTTP(srv.URL+elicit.MCPPath, transport.WithHTTPHeaders(map[string]string{"X-User": "bob"}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr,
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}),
		mcpclient.WithProtocolVersion("2025-11-25"))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "probe"
	if _, err := c.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	p := recv(t, seen)
	id, ok := engine.TransportID(p.Who.Session)
	if !ok || id != tr.GetSessionId() || p.Who.Subject != "bob" {
		t.Fatalf("identity %+v, want bob on the transport session", p.Who)
	}
	if p.Protocol != "2025-11-25" || p.Form || !p.URL {
		t.Fatalf("the handler saw %+v, want 2025-11-25 with URL mode alone", p)
	}
}

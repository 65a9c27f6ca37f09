package mcpgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	mcpclient "github.com/mark3labs/mcp-go/client"
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

// newProbe returns a front-end on a new mcp-go server with the tools
// "probe" and "other", which report their call and, with {"ask": true},
// ask for a confirmation first (Claimed: the answer was yes).
func newProbe(t *testing.T) (*Server, chan probe) {
	t.Helper()
	ev := fronttest.NewElicitor(t, nil, nil)
	m := server.NewMCPServer("test", "1", server.WithToolCapabilities(false))
	f := New(ev, m, &Options{Subject: func(ctx context.Context) string {
		s, _ := ctx.Value(subjectKey{}).(string)
		return s
	}})
	seen := make(chan probe, 16)
	h := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := engine.PeerFrom(ctx)
		if p == nil {
			// Not elicitvault's call (someone else's requestState).
			seen <- probe{State: req.Params.RequestState}
			return mcp.NewToolResultText("ok"), nil
		}
		c := p.Call()
		pr := probe{Who: c.Who, Protocol: c.Protocol, Form: c.FormMode, URL: c.URLMode, State: req.Params.RequestState}
		if req.GetBool("ask", false) {
			ok, err := elicit.Confirm(ctx, "OK?")
			if err != nil {
				seen <- pr
				return nil, err
			}
			pr.Claimed = ok
		}
		seen <- pr
		return mcp.NewToolResultText("ok"), nil
	}
	m.AddTool(mcp.NewTool("probe", mcp.WithBoolean("ask")), h)
	m.AddTool(mcp.NewTool("other", mcp.WithBoolean("ask")), h)
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

// confirmed is the input response that confirms.
var confirmed = json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)

// modernCall is a tools/call of 2026-07-28.
func modernCall(tool, args, state string, responses map[string]json.RawMessage) []byte {
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
	if responses != nil {
		params["inputResponses"] = responses
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	return b
}

// reply is a JSON-RPC response as the tests read it.
type reply struct {
	Result *struct {
		ResultType    string                     `json:"resultType"`
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// code is the JSON-RPC error code of r, 0 for a result.
func (r *reply) code() int {
	if r.Error != nil {
		return r.Error.Code
	}
	return 0
}

// key is the key of r's one input request.
func (r *reply) key(t *testing.T) string {
	t.Helper()
	if r.Result == nil || r.Result.ResultType != "input_required" || len(r.Result.InputRequests) != 1 {
		t.Fatalf("not an input-required result: %+v", r)
	}
	for k := range r.Result.InputRequests {
		return k
	}
	return ""
}

func decode(t *testing.T, body []byte) *reply {
	t.Helper()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body = body[i+len("data: "):]
	}
	var r reply
	if err := json.Unmarshal(bytes.TrimSpace(body), &r); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return &r
}

// post sends a 2026-07-28 tools/call as user over Streamable HTTP.
func post(t *testing.T, url, user string, msg []byte) *reply {
	t.Helper()
	var m struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(msg, &m)
	req, _ := http.NewRequest(http.MethodPost, url+elicit.MCPPath, bytes.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", m.Params.Name)
	req.Header.Set("X-User", user)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return decode(t, body)
}

// withUser is an authentication stand-in: the X-User header is the user.
func withUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, r.Header.Get("X-User"))))
	})
}

// quiet fails the test if the probe ran.
func quiet(t *testing.T, seen chan probe) {
	t.Helper()
	select {
	case p := <-seen:
		t.Fatalf("a refused call ran its handler: %+v", p)
	default:
	}
}

// The requestState of 2026-07-28 is checked before mcp-go reads the call:
// one that was used, tampered with, or issued for another user, tool or
// arguments is -32602 and the handler never runs.
func TestRequestStateCheckHTTP(t *testing.T) {
	f, seen := newProbe(t)
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	args := `{"ask":true}`
	ask := func() (string, string) {
		t.Helper()
		r := post(t, srv.URL, "alice", modernCall("probe", args, "", nil))
		k := r.key(t)
		if p := recv(t, seen); p.Who != (engine.Identity{Subject: "alice", Session: engine.Sessionless}) || p.Protocol != mcp.ProtocolVersion20260728 || !p.Form || p.URL {
			t.Fatalf("the handler saw %+v", p)
		}
		return r.Result.RequestState, k
	}

	// A requestState of the call, with its answer, passes once.
	state, key := ask()
	if r := post(t, srv.URL, "alice", modernCall("probe", args, state, map[string]json.RawMessage{key: confirmed})); r.code() != 0 {
		t.Fatalf("valid requestState: error %d", r.code())
	}
	if p := recv(t, seen); !p.Claimed {
		t.Fatalf("the handler did not get the answer: %+v", p)
	}

	for _, tc := range []struct {
		name, user, tool, args string
		state                  func() (string, string)
	}{
		{"replayed", "alice", "probe", args, func() (string, string) { return state, key }},
		{"tampered", "alice", "probe", args, func() (string, string) {
			s, k := ask()
			b := []byte(s)
			b[len(b)-3] ^= 1
			return string(b), k
		}},
		{"another user's", "mallory", "probe", args, ask},
		{"another tool's", "alice", "other", args, ask},
		{"other arguments'", "alice", "probe", `{"ask":true,"n":2}`, ask},
		{"not JSON arguments'", "alice", "probe", `[1]`, ask},
	} {
		s, k := tc.state()
		if r := post(t, srv.URL, tc.user, modernCall(tc.tool, tc.args, s, map[string]json.RawMessage{k: confirmed})); r.code() != mcp.INVALID_PARAMS {
			t.Errorf("%s requestState: error %d, want %d", tc.name, r.code(), mcp.INVALID_PARAMS)
		}
		quiet(t, seen)
	}

	// The key spelled in another way that JSON reads as requestState (an
	// escape, another case) is checked all the same.
	for _, spelling := range []string{`"request\u0053tate"`, `"RequestState"`, `"requeſtState"`} {
		s, k := ask()
		msg := bytes.Replace(modernCall("probe", args, s, map[string]json.RawMessage{k: confirmed}), []byte(`"requestState"`), []byte(spelling), 1)
		if r := post(t, srv.URL, "alice", msg); r.code() != 0 {
			t.Fatalf("requestState spelled %s: error %d", spelling, r.code())
		}
		recv(t, seen)
		if r := post(t, srv.URL, "alice", msg); r.code() != mcp.INVALID_PARAMS {
			t.Errorf("replayed requestState spelled %s: error %d, want %d", spelling, r.code(), mcp.INVALID_PARAMS)
		}
		quiet(t, seen)
	}

	// Someone else's requestState is not elicitvault's to check: it
	// reaches the handler untouched.
	if r := post(t, srv.URL, "alice", modernCall("probe", `{}`, "theirs", nil)); r.code() != 0 {
		t.Fatalf("foreign requestState: error %d", r.code())
	}
	if p := recv(t, seen); p.State != "theirs" {
		t.Fatalf("the handler saw %+v", p)
	}
}

// A requestState whose answer never reached the handler (the run failed
// before) is given back: the client may send it again.
func TestRequestStateReleased(t *testing.T) {
	f, seen := newProbe(t)
	fail := true
	f.m.AddTool(mcp.NewTool("flaky"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" && fail {
			fail = false
			return nil, io.ErrUnexpectedEOF // before it asks: the answer is not delivered
		}
		ok, err := elicit.Confirm(ctx, "OK?")
		if err != nil {
			return nil, err
		}
		seen <- probe{Claimed: ok}
		return mcp.NewToolResultText("ok"), nil
	})
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	r := post(t, srv.URL, "alice", modernCall("flaky", `{}`, "", nil))
	retry := modernCall("flaky", `{}`, r.Result.RequestState, map[string]json.RawMessage{r.key(t): confirmed})
	if r := post(t, srv.URL, "alice", retry); r.code() == 0 {
		t.Fatal("the failing run succeeded")
	}
	if r := post(t, srv.URL, "alice", retry); r.code() != 0 {
		t.Fatalf("resend: error %d", r.code())
	}
	if p := recv(t, seen); !p.Claimed {
		t.Fatal("the resend did not get the answer")
	}
}

// An mcp-go server served without Handler runs no check: a requestState
// of elicitvault's reaching the handler unchecked is refused.
func TestRequestStateUnchecked(t *testing.T) {
	f, seen := newProbe(t)
	checked := httptest.NewServer(withUser(f.Handler(nil)))
	defer checked.Close()
	unchecked := httptest.NewServer(withUser(server.NewStreamableHTTPServer(f.m, server.WithEndpointPath(elicit.MCPPath))))
	defer unchecked.Close()
	r := post(t, checked.URL, "alice", modernCall("probe", `{"ask":true}`, "", nil))
	recv(t, seen)
	if r := post(t, unchecked.URL, "alice", modernCall("probe", `{"ask":true}`, r.Result.RequestState, map[string]json.RawMessage{r.key(t): confirmed})); r.code() == 0 {
		t.Fatalf("an unchecked requestState reached the handler: %+v", recv(t, seen))
	}
	quiet(t, seen)
}

func TestRequestStateCheckStdio(t *testing.T) {
	f, seen := newProbe(t)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), subjectKey{}, "alice"))
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.ServeStdio(ctx, inR, outW) }()
	lines := make(chan []byte, 16)
	go func() {
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	send := func(msg []byte) *reply {
		inW.Write(append(msg, '\n'))
		select {
		case l := <-lines:
			return decode(t, l)
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	r := send(modernCall("probe", `{"ask":true}`, "", nil))
	key := r.key(t)
	p := recv(t, seen)
	if p.Who.Subject != "alice" || !p.Who.HasSession() {
		t.Fatalf("identity %+v", p.Who)
	}
	good := modernCall("probe", `{"ask":true}`, r.Result.RequestState, map[string]json.RawMessage{key: confirmed})
	if r := send(good); r.code() != 0 {
		t.Fatalf("valid requestState: error %d", r.code())
	}
	if p := recv(t, seen); !p.Claimed {
		t.Fatal("the handler did not get the answer")
	}
	if r := send(good); r.code() != mcp.INVALID_PARAMS {
		t.Errorf("replayed requestState: error %d", r.code())
	}
	quiet(t, seen)
	inW.Close()
	<-done
}

// A stateful session of 2025-11-25 binds state to its transport session
// ID; the capabilities are the session's, from initialize.
func TestIdentityStatefulSession(t *testing.T) {
	f, seen := newProbe(t)
	srv := httptest.NewServer(withUser(f.Handler(nil)))
	defer srv.Close()
	c, tr := StartClient(t, srv.URL+elicit.MCPPath, map[string]string{"X-User": "bob"}, "2025-11-25",
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}))
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

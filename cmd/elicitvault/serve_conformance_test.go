package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type rpcReply struct {
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpc posts one JSON-RPC request and returns the reply and the response's
// session ID.
func rpc(t *testing.T, url string, headers map[string]string, method string, params any) (rpcReply, string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):]
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			b = b[:j]
		}
	}
	var r rpcReply
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %s: %v", method, b, err)
		}
	}
	return r, res.Header.Get("Mcp-Session-Id")
}

// The capabilities the server declares, on initialize (2025-11-25) and on
// server/discover (2026-07-28), are what it serves: a method of a
// declared capability answers, one of another is not found (-32601). With
// the conformance fixtures it has a prompt; without, none.
func TestCapabilitiesAsServed(t *testing.T) {
	for _, conformance := range []bool{true, false} {
		t.Run(fmt.Sprintf("conformance=%v", conformance), func(t *testing.T) {
			r, _ := newTestReferenceWith(t, &referenceOptions{Conformance: conformance})
			capabilitiesAsServed(t, r, conformance)
		})
	}
}

func capabilitiesAsServed(t *testing.T, r *reference, prompts bool) {
	srv := httptest.NewServer(r.handler())
	defer srv.Close()

	probes := map[string]struct {
		method string
		params map[string]any
	}{
		"tools":       {"tools/list", map[string]any{}},
		"prompts":     {"prompts/list", map[string]any{}},
		"resources":   {"resources/list", map[string]any{}},
		"completions": {"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "test_input_required_result_prompt"}, "argument": map[string]any{"name": "a", "value": "b"}}},
		"logging":     {"logging/setLevel", map[string]any{"level": "info"}},
	}
	check := func(version string, caps map[string]json.RawMessage, call func(method string, params map[string]any) rpcReply) {
		for capability, p := range probes {
			if version == "2026-07-28" && capability == "logging" {
				// logging/setLevel is gone: the level comes with each
				// request's _meta.
				continue
			}
			_, declared := caps[capability]
			reply := call(p.method, p.params)
			served := reply.Error == nil || reply.Error.Code != -32601
			if declared != served {
				t.Errorf("%s: %s declared %v, %s served %v (%+v)", version, capability, declared, p.method, served, reply.Error)
			}
		}
		for _, must := range []string{"tools", "logging"} {
			if _, ok := caps[must]; !ok {
				t.Errorf("%s: %s not declared", version, must)
			}
		}
		if _, ok := caps["prompts"]; ok != prompts {
			t.Errorf("%s: prompts declared %v, want %v", version, ok, prompts)
		}
	}

	// 2025-11-25: initialize, then the session's requests.
	init, session := rpc(t, srv.URL+"/mcp", nil, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"},
	})
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(init.Result["capabilities"], &caps); err != nil || session == "" {
		t.Fatalf("initialize: %+v, session %q", init, session)
	}
	h := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
	notify, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewReader(notify))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	check("2025-11-25", caps, func(method string, params map[string]any) rpcReply {
		reply, _ := rpc(t, srv.URL+"/mcp", h, method, params)
		return reply
	})

	// 2026-07-28: server/discover, then requests that carry their _meta.
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	h = map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	disc, _ := rpc(t, srv.URL+"/mcp", h, "server/discover", map[string]any{"_meta": meta})
	caps = nil
	if err := json.Unmarshal(disc.Result["capabilities"], &caps); err != nil {
		t.Fatalf("server/discover: %+v", disc)
	}
	check("2026-07-28", caps, func(method string, params map[string]any) rpcReply {
		p := map[string]any{"_meta": meta}
		for k, v := range params {
			p[k] = v
		}
		reply, _ := rpc(t, srv.URL+"/mcp", h, method, p)
		return reply
	})
}

// The fixtures never send a client a request of a capability it did not
// declare (before, a 2025-11-25 client without sampling got
// sampling/createMessage and answered -32601, and a 2026-07-28 one got
// input requests it could not answer): they answer -32021 naming what is
// missing. The client here declares elicitation only, then nothing.
func TestConformanceFixturesAskOnlyWhatIsDeclared(t *testing.T) {
	r, _ := newTestReference(t, 0)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			connect := func(caps *mcp.ClientCapabilities, onElicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, func() []string) {
				var mu sync.Mutex
				var received []string
				c := mcp.NewClient(&mcp.Implementation{Name: "declares-little", Version: "1"}, &mcp.ClientOptions{
					Capabilities:       caps,
					ElicitationHandler: onElicit,
					MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
				})
				c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if !strings.HasPrefix(method, "notifications/") {
							mu.Lock()
							received = append(received, method)
							mu.Unlock()
						}
						return next(ctx, method, req)
					}
				})
				ct, st := mcp.NewInMemoryTransports()
				ss, err := r.server.Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ss.Close() })
				cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs, func() []string {
					mu.Lock()
					defer mu.Unlock()
					return slices.Clone(received)
				}
			}
			missing := func(what string, err error, want ...string) {
				t.Helper()
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != mcp.CodeMissingRequiredClientCapabilities {
					t.Errorf("%s: %v, want -32021", what, err)
					return
				}
				var data struct {
					RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
				}
				if err := json.Unmarshal(we.Data, &data); err != nil {
					t.Errorf("%s: data %s: %v", what, we.Data, err)
				}
				if got := slices.Sorted(maps.Keys(data.RequiredCapabilities)); !slices.Equal(got, want) {
					t.Errorf("%s: requiredCapabilities %v, want %v", what, got, want)
				}
			}

			accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}
			cs, received := connect(&mcp.ClientCapabilities{}, accept)
			for _, tc := range []struct {
				tool string
				want []string
			}{
				{"test_input_required_result_sampling", []string{"sampling"}},
				{"test_input_required_result_list_roots", []string{"roots"}},
				{"test_input_required_result_multiple_inputs", []string{"roots", "sampling"}},
				{"test_missing_capability", []string{"sampling"}},
			} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool})
				if err == nil {
					t.Errorf("%s: %+v (input requests %v), want -32021", tc.tool, res, res.InputRequests)
					continue
				}
				missing(tc.tool, err, tc.want...)
			}
			// What it declared is asked for.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_capabilities"})
			if err != nil {
				t.Errorf("capabilities: %v", err)
			} else if _, ok := res.InputRequests["capital_question"]; ok {
				t.Errorf("capabilities: asked for sampling: %v", res.InputRequests)
			}
			if got := received(); slices.Contains(got, "sampling/createMessage") || slices.Contains(got, "roots/list") {
				t.Errorf("the client received %v", got)
			}

			bare, received := connect(&mcp.ClientCapabilities{}, nil)
			_, err = bare.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_input_required_result_prompt"})
			missing("prompt", err, "elicitation")
			if got := received(); len(got) > 0 {
				t.Errorf("a client that declared nothing received %v", got)
			}
		})
	}
}

// serve lists the conformance fixtures (test_* tools and the prompt) only
// with --conformance: a client of the reference server sees the demo.
func TestServeConformanceFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		fixtures bool
	}{
		{nil, false},
		{[]string{"--conformance"}, true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &fronttest.LockedBuffer{}
		e := serveEnv(stderr)
		results := make(chan serveResult, 1)
		go func() {
			results <- serveResult{run(ctx, e, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)), stderr}
		}()
		endpoint := waitFor(t, stderr, results)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
		if err != nil {
			t.Fatalf("connecting to %s: %v", endpoint, err)
		}
		var tools []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			tools = append(tools, tool.Name)
		}
		fixtures := slices.ContainsFunc(tools, func(name string) bool { return strings.HasPrefix(name, "test_") })
		if fixtures != tc.fixtures || !slices.Contains(tools, "delete_contacts") {
			t.Errorf("serve %v lists %v, want the fixtures %v", tc.args, tools, tc.fixtures)
		}
		var prompts []string
		if cs.InitializeResult().Capabilities.Prompts != nil {
			for p, err := range cs.Prompts(ctx, nil) {
				if err != nil {
					t.Fatalf("prompts/list: %v", err)
				}
				prompts = append(prompts, p.Name)
			}
		}
		if got := slices.Contains(prompts, "test_input_required_result_prompt"); got != tc.fixtures {
			t.Errorf("serve %v lists the prompts %v, want the fixture's %v", tc.args, prompts, tc.fixtures)
		}
		cs.Close()
		cancel()
		if r := <-results; r.code != 0 {
			t.Errorf("serve %v exited %d:\n%s", tc.args, r.code, r.stderr)
		}
	}
}

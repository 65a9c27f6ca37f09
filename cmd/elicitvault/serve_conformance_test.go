package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
// declared capability answers, one of another is not found (-32601).
func TestCapabilitiesAsServed(t *testing.T) {
	r, _ := newTestReference(t, 0)
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
		for _, must := range []string{"tools", "prompts", "logging"} {
			if _, ok := caps[must]; !ok {
				t.Errorf("%s: %s not declared", version, must)
			}
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

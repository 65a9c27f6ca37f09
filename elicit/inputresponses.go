package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/internal/httpbody"
)

// invalidParams is the JSON-RPC error -32602 with msg.
func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicit: invalid params: " + msg}
}

// clip shortens a client-chosen key for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// The go-sdk decodes a request's params before any middleware runs, and
// fails a request whose inputResponses do not decode with an error of its
// own: over Streamable HTTP on 2026-07-28 the header check answers -32020
// (header mismatch, "failed to extract name"); over stdio it answers
// -32602 with a message that quotes all the params, answers included.
// checkHTTPInputResponses and CheckTransport answer such a request first,
// with -32602 (invalid params) naming the key of the input response that
// is wrong and quoting nothing else.

// maxChecked bounds the body checkHTTPInputResponses reads to check it; a
// larger one passes unchecked, to the go-sdk's own limits.
const maxChecked = 4 << 20

// checkHTTPInputResponses returns h, a Streamable HTTP handler of the go-sdk,
// answering a POST whose tools/call, prompts/get or resources/read has
// inputResponses that do not decode with HTTP 400 and the JSON-RPC error
// -32602 naming the key, instead of the go-sdk's -32020.
func checkHTTPInputResponses(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, ok := httpbody.Peek(r, maxChecked)
		if !ok || !mayHaveInputResponses(body) {
			h.ServeHTTP(w, r)
			return
		}
		req := decodeCall(body)
		if req == nil || !refuseCall(w, req.ID, checkInputResponses(req.Method, req.Params)) {
			h.ServeHTTP(w, r)
		}
	})
}

// decodeCall decodes body as a JSON-RPC call, or returns nil.
func decodeCall(body []byte) *jsonrpc.Request {
	m, err := jsonrpc.DecodeMessage(body)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		return nil
	}
	return req
}

// refuseCall answers the call id with werr and HTTP 400, and reports
// whether it did: not for a nil werr, nor one that does not encode (the
// handler then answers the call).
func refuseCall(w http.ResponseWriter, id jsonrpc.ID, werr *jsonrpc.Error) bool {
	if werr == nil {
		return false
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(out)
	return true
}

// mayHaveInputResponses reports whether a JSON body can have the key
// inputResponses: only a body that has it as written, or that escapes a
// character (\u0065 and the like; no letter of the key has a shorter
// escape), needs the decoding that checks it. Most requests have neither,
// and the go-sdk decodes them once, not twice.
func mayHaveInputResponses(body []byte) bool {
	return bytes.Contains(body, []byte("inputResponses")) || bytes.Contains(body, []byte(`\u`))
}

// CheckTransport returns t answering a tools/call, prompts/get or
// resources/read request whose inputResponses (protocol 2026-07-28) do not
// decode with the JSON-RPC error -32602 naming the key, before the go-sdk
// sees it, which would answer with an error quoting the params, answers
// included. Use it for stdio and the other transports a server runs with
// Server.Run or Connect ([Elicitor.Handler] does the same over HTTP):
//
//	err := server.Run(ctx, elicit.CheckTransport(&mcp.StdioTransport{}))
func CheckTransport(t mcp.Transport) mcp.Transport { return checkedTransport{t} }

type checkedTransport struct{ mcp.Transport }

func (t checkedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return checkedConn{c}, nil
}

type checkedConn struct{ mcp.Connection }

func (c checkedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return m, nil
		}
		werr := checkInputResponses(req.Method, req.Params)
		if werr == nil {
			return m, nil
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: werr}); err != nil {
			return nil, err
		}
	}
}

// checkInputResponses checks the inputResponses of params, decoding each as
// the go-sdk does (mcp.InputResponseMap), and returns -32602 for the first
// key, in order, that does not decode.
func checkInputResponses(method string, params json.RawMessage) *jsonrpc.Error {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return nil
	}
	// The field's name matched exactly, as the go-sdk does.
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil // the go-sdk reports malformed params
	}
	raw, ok := p["inputResponses"]
	if !ok || string(raw) == "null" {
		return nil
	}
	// Most retries decode: once, as the go-sdk will. Only one that does not
	// needs each key decoded alone, to name the first that fails (the
	// go-sdk decodes the whole map the same way, key by key, so the two
	// agree).
	var m mcp.InputResponseMap
	if json.Unmarshal(raw, &m) == nil {
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return invalidParams("inputResponses is not an object")
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		one, err := json.Marshal(map[string]json.RawMessage{k: all[k]})
		if err != nil {
			return invalidParams(fmt.Sprintf("inputResponses[%q] is not an input response", clip(k)))
		}
		var m mcp.InputResponseMap
		if err := json.Unmarshal(one, &m); err != nil {
			return invalidParams(fmt.Sprintf("inputResponses[%q] is not an elicitation, sampling or roots result", clip(k)))
		}
	}
	return nil
}

package elicit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/elicitvault/elicitvault/internal/httpbody"
)

// codeHeaderMismatch is the JSON-RPC error of a request whose routing
// headers disagree with its body (SEP-2243).
const codeHeaderMismatch = -32020

// checkTaskHeaders returns h refusing, on 2026-07-28, a tasks/get,
// tasks/update or tasks/cancel whose Mcp-Name header is not its taskId
// (SEP-2663 extends SEP-2243's routing headers to them), with HTTP 400
// and -32020. The go-sdk checks the header for the methods it knows
// (tools/call, prompts/get, resources/read) only. A request without the
// header passes: the go-sdk's client (v1.8.0) sends none for custom
// methods.
func checkTaskHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Header.Get("Mcp-Protocol-Version") < ProtocolInputRequests {
			h.ServeHTTP(w, r)
			return
		}
		body, ok := httpbody.Peek(r, maxChecked)
		if !ok || !bytes.Contains(body, []byte("tasks/")) {
			h.ServeHTTP(w, r)
			return
		}
		req := decodeCall(body)
		if req == nil {
			h.ServeHTTP(w, r)
			return
		}
		switch req.Method {
		case "tasks/get", "tasks/update", "tasks/cancel":
		default:
			h.ServeHTTP(w, r)
			return
		}
		var p struct {
			TaskID string `json:"taskId"`
		}
		json.Unmarshal(req.Params, &p)
		values := r.Header.Values("Mcp-Name")
		if name, ok := headerValue(values); len(values) == 0 || ok && name == p.TaskID {
			h.ServeHTTP(w, r)
			return
		}
		msg := "Mcp-Name header does not match params.taskId"
		if !refuseCall(w, req.ID, &jsonrpc.Error{Code: codeHeaderMismatch, Message: msg}) {
			h.ServeHTTP(w, r)
		}
	})
}

// headerValue is a header's one value, without surrounding whitespace,
// decoded when it is written as =?base64?…?= (SEP-2243).
func headerValue(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	v := strings.TrimSpace(values[0])
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		enc, ok = strings.CutSuffix(enc, "?=")
		b, err := base64.StdEncoding.DecodeString(enc)
		if !ok || err != nil {
			return "", false
		}
		v = string(b)
	}
	return v, true
}

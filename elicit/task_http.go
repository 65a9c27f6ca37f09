package elicit

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/httpbody"
)

// checkTaskHeaders returns h refusing, on 2026-07-28, a tasks/get,
// tasks/update or tasks/cancel whose Mcp-Name header is not its taskId
// (SEP-2663 extends SEP-2243's routing headers to them), with HTTP 400
// and -32020. The go-sdk checks the header for the methods it knows
// (tools/call, prompts/get, resources/read) only. A request without the
// header passes: the go-sdk's client (v1.8.0) sends none for custom
// methods.
func checkTaskHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Header.Get("Mcp-Protocol-Version") < engine.ProtocolInputRequests {
			h.ServeHTTP(w, r)
			return
		}
		body, ok := httpbody.Peek(r, maxChecked)
		if !ok || !bytes.Contains(body, []byte("tasks/")) && bytes.IndexByte(body, '\\') < 0 { // an escape may spell the method
			h.ServeHTTP(w, r)
			return
		}
		req := decodeCall(body)
		if req == nil {
			h.ServeHTTP(w, r)
			return
		}
		if !engine.IsTaskMethod(req.Method) {
			h.ServeHTTP(w, r)
			return
		}
		var p struct {
			TaskID string `json:"taskId"`
		}
		json.Unmarshal(req.Params, &p)
		if engine.TaskNameMatches(r.Header.Values("Mcp-Name"), p.TaskID) {
			h.ServeHTTP(w, r)
			return
		}
		msg := "Mcp-Name header does not match params.taskId"
		if !refuseCall(w, req.ID, &jsonrpc.Error{Code: engine.CodeHeaderMismatch, Message: msg}) {
			h.ServeHTTP(w, r)
		}
	})
}

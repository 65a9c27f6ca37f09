package elicit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
		if r.Method != http.MethodPost || r.Body == nil || r.Header.Get("Mcp-Protocol-Version") < ProtocolInputRequests {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxChecked+1))
		rest := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		if err != nil || len(body) > maxChecked || !bytes.Contains(body, []byte("tasks/")) {
			h.ServeHTTP(w, r)
			return
		}
		m, err := jsonrpc.DecodeMessage(body)
		req, ok := m.(*jsonrpc.Request)
		if err != nil || !ok || !req.IsCall() {
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
		out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: engine.CodeHeaderMismatch, Message: msg}})
		if err != nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(out)
	})
}

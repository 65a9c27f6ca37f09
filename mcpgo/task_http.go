package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
)

// The tasks extension of 2026-07-28 (SEP-2663) is served in front of
// mcp-go, at the transport, as the requestState check is: mcp-go v1.2.1
// has the task API of 2025-11-25 (tasks/get, tasks/result, tasks/list,
// tasks/cancel, with its records in process memory), no tasks/update, and
// a tool handler returns a CallToolResult, whose JSON cannot be a
// CreateTaskResult (resultType "task" with the task's fields). So:
//
//   - tasks/get, tasks/update and tasks/cancel of 2026-07-28 are answered
//     by the transport (engine.Tasks.Serve) and never reach mcp-go;
//   - a 2026-07-28 tools/call runs through mcp-go as usual, with a
//     taskReplies in its context: when the middleware runs the call as a
//     task (RunAsTask, StartTask), it answers with a placeholder result
//     that names the task, and the transport writes the task
//     (CreateTaskResult) in the place of the response that carries it.

// taskMarker is the _meta key of a placeholder result.
const taskMarker = "io.elicitvault/task"

// taskReplies are the tool calls of a request (Streamable HTTP) or a
// connection (stdio) that became tasks, by marker: the JSON of their
// CreateTaskResult.
type taskReplies struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

type repliesKey struct{}

// repliesFrom returns the taskReplies of the transport that carries ctx's
// request, or nil (one that cannot answer with a task).
func repliesFrom(ctx context.Context) *taskReplies {
	r, _ := ctx.Value(repliesKey{}).(*taskReplies)
	return r
}

// placeholder keeps created (a CreateTaskResult's JSON) and returns the
// result that the transport replaces with it.
func (t *taskReplies) placeholder(created json.RawMessage) *mcp.CallToolResult {
	marker := engine.RandomID()
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]json.RawMessage{}
	}
	t.m[marker] = created
	t.mu.Unlock()
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	res.Meta = mcp.NewMetaFromMap(map[string]any{taskMarker: marker})
	return res
}

// rewrite returns p, one message as mcp-go writes it (a JSON-RPC message,
// framed as an SSE event or a line), with the response that carries a
// placeholder replaced by the task.
func (t *taskReplies) rewrite(p []byte) []byte {
	if !bytes.Contains(p, []byte(taskMarker)) {
		return p
	}
	start, end := bytes.IndexByte(p, '{'), bytes.LastIndexByte(p, '}')
	if start < 0 || end < start {
		return p
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Meta map[string]any `json:"_meta"`
		} `json:"result"`
	}
	if json.Unmarshal(p[start:end+1], &msg) != nil || len(msg.ID) == 0 {
		return p
	}
	marker, _ := msg.Result.Meta[taskMarker].(string)
	t.mu.Lock()
	created, ok := t.m[marker]
	delete(t.m, marker)
	t.mu.Unlock()
	if !ok {
		return p
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", msg.ID, created})
	if err != nil {
		return p
	}
	return bytes.Join([][]byte{p[:start], out, p[end+1:]}, nil)
}

// taskWriter is the http.ResponseWriter of a 2026-07-28 tools/call: it
// writes the task in the place of the placeholder response.
type taskWriter struct {
	http.ResponseWriter
	replies *taskReplies
}

func (w *taskWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.replies.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *taskWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *taskWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// taskRequest reports what the transport does with the message c of
// 2026-07-28 for the tasks extension: answer it (a tasks/* request, or a
// tools/call of a TaskRequired tool from a client without the extension:
// the JSON-RPC response and its HTTP status), or let it through, as a
// call that may become a task (replies) and whose requestState, for a
// tool that runs as a task, is not checked (asTask).
func (f *Server) taskRequest(ctx context.Context, c *call, who engine.Identity) (response []byte, status int, asTask bool) {
	declared := c.Params.Meta.Capabilities != nil && engine.DeclaresTasks(c.Params.Meta.Capabilities.Extensions)
	if engine.IsTaskMethod(c.Method) {
		if !declared {
			return rpcErrorResponse(c.ID, engine.NoTasksError()), http.StatusBadRequest, false
		}
		res, err := f.eng.Tasks().Serve(ctx, who, c.Method, c.Params.TaskID, c.Params.InputResponses)
		var ip *engine.InvalidParamsError
		switch {
		case errors.As(err, &ip):
			return errorResponse(c.ID, mcp.INVALID_PARAMS, ip.Error()), http.StatusBadRequest, false
		case err != nil:
			return errorResponse(c.ID, mcp.INTERNAL_ERROR, "elicit: the store failed"), http.StatusOK, false
		}
		out, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  any             `json:"result"`
		}{"2.0", c.ID, res})
		if err != nil {
			return errorResponse(c.ID, mcp.INTERNAL_ERROR, "elicit: the task does not encode"), http.StatusOK, false
		}
		return out, http.StatusOK, false
	}
	support, ok := f.tasks.Support(c.Params.Name)
	if ok && support == engine.TaskRequired && !declared {
		return rpcErrorResponse(c.ID, engine.NoTasksError()), http.StatusBadRequest, false
	}
	return nil, 0, ok && declared
}

// rpcErrorResponse is the JSON-RPC response of the error re.
func rpcErrorResponse(id json.RawMessage, re *engine.RPCError) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{re.Code, re.Message, re.Data}})
	return b
}

// taskMessage decodes msg when the tasks extension may concern it: a
// tasks/* request or a tools/call, of 2026-07-28 (its _meta's protocol
// version, or the header's over HTTP).
func (f *Server) taskMessage(msg []byte, header string) *call {
	// An escape may spell either method ("tools\/call").
	if !f.tasks.Enabled() || !bytes.Contains(msg, []byte(`"tasks/`)) && !bytes.Contains(msg, []byte(`"tools/call"`)) && bytes.IndexByte(msg, '\\') < 0 {
		return nil
	}
	var c call
	if json.Unmarshal(msg, &c) != nil || len(c.ID) == 0 || string(c.ID) == "null" {
		return nil
	}
	if c.Method != string(mcp.MethodToolsCall) && !engine.IsTaskMethod(c.Method) {
		return nil
	}
	if !mcp.IsModernProtocol(c.Params.Meta.Protocol) && !mcp.IsModernProtocol(header) {
		return nil
	}
	return &c
}

// taskHeaders refuses, over HTTP, a tasks/* request whose Mcp-Name header
// is not its taskId (SEP-2243, extended to tasks/* by SEP-2663), or whose
// Mcp-Method is not its method: HTTP 400 and -32020.
func taskHeaders(r *http.Request, c *call) []byte {
	if !engine.IsTaskMethod(c.Method) {
		return nil
	}
	if m := r.Header.Values("Mcp-Method"); len(m) > 0 && (len(m) != 1 || m[0] != c.Method) {
		return errorResponse(c.ID, engine.CodeHeaderMismatch, "Mcp-Method header does not match the request's method")
	}
	if !engine.TaskNameMatches(r.Header.Values("Mcp-Name"), c.Params.TaskID) {
		return errorResponse(c.ID, engine.CodeHeaderMismatch, "Mcp-Name header does not match params.taskId")
	}
	return nil
}

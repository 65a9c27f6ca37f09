package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TaskSupport says how a tool runs as a task (RunAsTask).
type TaskSupport string

const (
	// TaskOptional runs the tool as a task for a client that negotiated
	// the tasks extension, and as a plain tool call for one that did not.
	TaskOptional TaskSupport = engine.TaskOptional
	// TaskRequired runs the tool as a task, and refuses a client that did
	// not negotiate the extension with the JSON-RPC error -32021.
	TaskRequired TaskSupport = engine.TaskRequired
)

// taskTable is what an Elicitor knows of tasks: the tools that run as
// tasks, and the servers it serves tasks/* on.
type taskTable struct {
	engine.TaskTools
	mu      sync.Mutex
	servers map[*mcp.Server]bool
}

// RunAsTask makes every call of the tool named tool, on a server s the
// Elicitor is installed on, run as a task of the tasks extension
// (io.modelcontextprotocol/tasks) when the client negotiated it, per
// request or for its session: the call returns at once a task, which the
// client polls with tasks/get and may cancel with tasks/cancel, while the
// handler runs in the background. It also serves tasks/get, tasks/update
// and tasks/cancel on s, and advertises the extension.
//
// Within a task, Form and Confirm do not wait on the call: the task's
// status becomes input_required, tasks/get lists the input request, and
// the answer comes with tasks/update, on any node. What a task keeps (its
// input requests, the answers, its result) is sealed in the store, bound
// to the task ID, the subject and the session; an answer is validated
// against the schema it was asked with before it is written, and is used
// once.
//
// A task is kept for an hour. Its handler runs on the node that
// received the call, with a context that ends when the task is cancelled,
// when its TTL passes, or when the Elicitor is closed. A node runs at most
// Config.MaxPending tasks at once, Config.MaxPendingPerSubject of one
// client (counted as the pending quotas count clients); a call beyond
// either fails with ErrTooManyPending before anything is written.
func (e *Elicitor) RunAsTask(s *mcp.Server, tool string, support TaskSupport) error {
	if support != TaskOptional && support != TaskRequired {
		return errors.New("elicit: RunAsTask needs TaskOptional or TaskRequired")
	}
	tt := &e.tasks
	tt.Set(tool, string(support))
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.servers[s] {
		return nil
	}
	// The handlers are never reached: the receiving middleware answers
	// tasks/* first. Registering makes the go-sdk accept the methods.
	unreachable := func(context.Context, *mcp.ServerSession, *taskParams) (*taskAck, error) {
		return nil, ErrNotInstalled
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if err := mcp.AddReceivingCustomMethod(s, m, unreachable); err != nil {
			return err
		}
	}
	if tt.servers == nil {
		tt.servers = map[*mcp.Server]bool{}
	}
	tt.servers[s] = true
	return nil
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskAck is the result of tasks/update and tasks/cancel, as a go-sdk
// result.
type taskAck struct {
	mcp.ResultBase
	engine.TaskAck
}

// taskResult is a task on the wire (engine.TaskWire), as a go-sdk result.
type taskResult struct {
	mcp.ResultBase
	*engine.TaskWire
}

// tasksNegotiated reports whether the client of a request declared the
// tasks extension: in the request's _meta (SEP-2575), else at
// initialize.
func tasksNegotiated(ss *mcp.ServerSession, meta mcp.Meta) bool {
	if meta != nil {
		if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
			var c struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			b, err := json.Marshal(raw)
			if err != nil || json.Unmarshal(b, &c) != nil {
				return false
			}
			return engine.DeclaresTasks(c.Extensions)
		}
	}
	if ss == nil {
		return false
	}
	if init := ss.InitializeParams(); init != nil && init.Capabilities != nil {
		return engine.DeclaresTasks(init.Capabilities.Extensions)
	}
	return false
}

// taskRPCError is an error of the tasks extension as the go-sdk sends it.
func taskRPCError(err error) error {
	var re *engine.RPCError
	if errors.As(err, &re) {
		return &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	return rpcError(err)
}

// advertiseTasks adds the tasks extension to the server's capabilities in
// the result of initialize or server/discover.
func (pa *taskPath) advertiseTasks(res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	if err != nil || !e.tasks.Enabled() {
		return res, err
	}
	add := func(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
		var out mcp.ServerCapabilities
		if c != nil {
			out = *c
		}
		ext := map[string]any{}
		for k, v := range out.Extensions {
			ext[k] = v
		}
		out.Extensions = ext
		out.AddExtension(engine.TasksExtension, nil)
		return &out
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		out := *r
		out.Capabilities = add(r.Capabilities)
		return &out, nil
	case *mcp.DiscoverResult:
		r.Capabilities = add(r.Capabilities)
		return r, nil
	}
	return res, err
}

// serveTask answers tasks/get, tasks/update and tasks/cancel, on any node
// (engine.Tasks.Serve), for the identity of the request, as a tool
// call's.
func (pa *taskPath) serveTask(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	e := pa.e
	p, ok := req.GetParams().(*taskParams)
	if !ok || !e.tasks.Enabled() {
		return next(ctx, method, req)
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if !tasksNegotiated(ss, p.GetMeta()) {
		return nil, taskRPCError(engine.NoTasksError())
	}
	if ss == nil {
		return nil, invalidParams("unknown task")
	}
	who := e.sdk.identity(&mcp.CallToolRequest{Session: ss, Extra: req.GetExtra()})
	res, err := e.engine.Tasks().Serve(ctx, who, method, p.TaskID, p.InputResponses)
	if err != nil {
		return nil, taskRPCError(err)
	}
	switch r := res.(type) {
	case *engine.TaskWire:
		return &taskResult{TaskWire: r}, nil
	case *engine.TaskAck:
		return &taskAck{TaskAck: *r}, nil
	}
	return nil, fmt.Errorf("elicit: %s has no result", method)
}

// startTask runs a tools/call as a task, when its tool runs as one and the
// client negotiated the extension; ok is false when the call is not a
// task's.
func (pa *taskPath) startTask(ctx context.Context, c *Call, req *mcp.CallToolRequest, next func(context.Context) (mcp.Result, error)) (_ mcp.Result, _ error, ok bool) {
	e := pa.e
	support, ok := e.tasks.Support(req.Params.Name)
	if !ok {
		return nil, nil, false
	}
	if !tasksNegotiated(req.Session, req.Params.GetMeta()) {
		if support == engine.TaskRequired {
			return nil, taskRPCError(engine.NoTasksError()), true
		}
		return nil, nil, false
	}
	res, err := e.task.launch(ctx, c, next)
	return res, err, true
}

// launch creates a task of the call c that runs body, and returns the
// CreateTaskResult once the task is in the store.
func (pa *taskPath) launch(ctx context.Context, c *Call, body func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	created, err := pa.e.engine.Tasks().Launch(ctx, c.peer, func(ctx context.Context) (json.RawMessage, error) {
		res, err := body(ctx)
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				return nil, &engine.RPCError{Code: je.Code, Message: je.Message, Data: je.Data}
			}
			return nil, err
		}
		out, err := json.Marshal(res)
		if err != nil {
			return nil, errors.New("elicit: task result does not encode")
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return &taskResult{TaskWire: created}, nil
}

// taskStart is what StartTask returns for the middleware: the work to run
// as a task.
type taskStart struct {
	work func(context.Context) (*mcp.CallToolResult, error)
}

func (*taskStart) Error() string {
	return "elicit: the tool call continues as a task (return StartTask's error unchanged)"
}

// StartTask continues the tool call of ctx as a task that runs work, for
// a handler that decides on its own, after gathering input, say, that the
// rest takes long: the handler returns what StartTask returns, unchanged,
// and the client gets the task (a CreateTaskResult) while work runs in
// the background as RunAsTask describes. A client that did not negotiate
// the tasks extension gets work's result once it has run, as the call's
// result; so does every client of a server without RunAsTask, for which
// StartTask runs work before it returns.
func StartTask(ctx context.Context, work func(ctx context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	e, err := fromContext(ctx)
	if err != nil || !e.tasks.Enabled() {
		return work(ctx)
	}
	return nil, &taskStart{work: work}
}

// escalate answers a call whose handler returned StartTask's error with a
// task that runs its work.
func (pa *taskPath) escalate(ctx context.Context, c *Call, req *mcp.CallToolRequest) func(mcp.Result, error) (mcp.Result, error) {
	e := pa.e
	return func(res mcp.Result, err error) (mcp.Result, error) { return e.task.escalated(ctx, c, req, res, err) }
}

func (pa *taskPath) escalated(ctx context.Context, c *Call, req *mcp.CallToolRequest, res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	cause := err
	if tr, ok := res.(*mcp.CallToolResult); ok && tr != nil && cause == nil {
		cause = tr.GetError()
	}
	var ts *taskStart
	if !errors.As(cause, &ts) {
		return res, err
	}
	work := func(ctx context.Context) (mcp.Result, error) {
		r, err := ts.work(ctx)
		if r == nil && err == nil {
			r = &mcp.CallToolResult{}
		}
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				return nil, err
			}
			// A tool's error, as the go-sdk reports one.
			r = &mcp.CallToolResult{}
			r.SetError(err)
		}
		return r, nil
	}
	if !tasksNegotiated(req.Session, req.Params.GetMeta()) {
		return work(ctx)
	}
	return e.task.launch(ctx, c, work)
}

// listTaskTools adds execution.taskSupport to the tools of a tools/list
// result that run as tasks (mcp.Tool has no such field in go-sdk v1.8.0).
func (pa *taskPath) listTaskTools(req mcp.Request) func(mcp.Result, error) (mcp.Result, error) {
	e := pa.e
	return func(res mcp.Result, err error) (mcp.Result, error) { return e.task.listedTaskTools(req, res, err) }
}

func (pa *taskPath) listedTaskTools(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	lr, ok := res.(*mcp.ListToolsResult)
	if err != nil || !ok || lr == nil || !e.tasks.Enabled() {
		return res, err
	}
	var fields map[string]json.RawMessage
	var tools []map[string]any
	raw, err := json.Marshal(lr)
	if err != nil || json.Unmarshal(raw, &fields) != nil || json.Unmarshal(fields["tools"], &tools) != nil {
		return res, nil
	}
	for _, t := range tools {
		name, _ := t["name"].(string)
		if support, ok := e.tasks.Support(name); ok {
			t["execution"] = map[string]any{"taskSupport": string(support)}
		}
	}
	if fields["tools"], err = json.Marshal(tools); err != nil {
		return res, nil
	}
	delete(fields, "_meta")
	if p := req.GetParams(); p != nil && p.GetMeta() != nil {
		if _, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion]; ok {
			fields["resultType"] = json.RawMessage(`"complete"`)
		}
	}
	out := &taskToolList{fields: fields}
	out.Meta = lr.Meta
	return out, nil
}

// taskToolList is a tools/list result whose tools carry execution.
type taskToolList struct {
	mcp.ResultBase
	fields map[string]json.RawMessage
}

func (l *taskToolList) MarshalJSON() ([]byte, error) {
	out := maps.Clone(l.fields)
	if len(l.Meta) > 0 {
		m, err := json.Marshal(l.Meta)
		if err != nil {
			return nil, err
		}
		out["_meta"] = m
	}
	return json.Marshal(out)
}

// taskPath is the tasks extension on the go-sdk: the tools that run as
// tasks and tasks/*; the input a task asks for while it runs is the
// engine's (engine.TaskRun.Ask, the engine.Ask.Task of its
// elicitations).
type taskPath struct{ e *Elicitor }

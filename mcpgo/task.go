package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// RunAsTask makes every call of the tool named tool on the server's
// mcp-go server run as a task of the tasks extension
// (io.modelcontextprotocol/tasks) for a 2026-07-28 client that declared
// the extension in its request, as elicit.Elicitor.RunAsTask does on the
// go-sdk: the call returns at once a task, which the client polls with
// tasks/get and may cancel with tasks/cancel, on any node of either SDK,
// while the handler runs in the background; within it, elicit.Form and
// elicit.Confirm are the task's input requests, answered with
// tasks/update, validated, sealed in the store (bound to the task, the
// subject and the session) and used once. With TaskRequired a client that
// did not declare the extension is refused with -32021.
//
// The extension is served by Handler and ServeStdio, in front of mcp-go
// (whose own task API, the earlier one of 2025-11-25, stays for the
// clients of that version), on 2026-07-28 requests only, and advertised
// in server/discover; tools/list shows the tool's execution.taskSupport. Do not also mark the tool with mcp-go's
// mcp.WithTaskSupport: mcp-go would refuse its calls.
func (f *Server) RunAsTask(tool string, support elicit.TaskSupport) error {
	if support != elicit.TaskOptional && support != elicit.TaskRequired {
		return errors.New("elicit: RunAsTask needs TaskOptional or TaskRequired")
	}
	f.tasks.Set(tool, string(support))
	return nil
}

// StartTask continues the tool call of ctx, in an mcp-go tool handler, as
// a task that runs work, as elicit.StartTask does on the go-sdk: the
// handler returns what StartTask returns, unchanged, and a 2026-07-28
// client that declared the tasks extension gets the task while work runs
// in the background. Any other client, and every client of a server
// without RunAsTask, gets work's result, run before StartTask returns.
func StartTask(ctx context.Context, work func(ctx context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	f, _ := ctx.Value(serverKey{}).(*Server)
	if f == nil || !f.tasks.Enabled() || repliesFrom(ctx) == nil || !tasksDeclared(ctx) {
		return work(ctx)
	}
	return nil, &taskStart{work: work}
}

// serverKey is the context key of the Server, in a tool handler's context.
type serverKey struct{}

// taskStart is what StartTask returns for the middleware.
type taskStart struct {
	work func(context.Context) (*mcp.CallToolResult, error)
}

func (*taskStart) Error() string {
	return "elicit: the tool call continues as a task (return StartTask's error unchanged)"
}

// tasksDeclared reports whether the request of ctx, a 2026-07-28 one,
// declared the tasks extension in its _meta.
func tasksDeclared(ctx context.Context) bool {
	pi := server.RequestProtocolInfoFromContext(ctx)
	return pi != nil && pi.Modern && pi.ClientCapabilities != nil && engine.DeclaresTasks(pi.ClientCapabilities.Extensions)
}

// taskCall runs the call req as a task when its tool runs as one and the
// client declared the extension; ok is false when the call is not a
// task's.
func (f *Server) taskCall(ctx context.Context, p *peer, req mcp.CallToolRequest, next server.ToolHandlerFunc) (_ *mcp.CallToolResult, _ error, ok bool) {
	support, ok := f.tasks.Support(req.Params.Name)
	if !ok {
		return nil, nil, false
	}
	replies := repliesFrom(ctx)
	if replies == nil || !tasksDeclared(ctx) {
		if support == engine.TaskRequired {
			// On 2026-07-28 the transport answered -32021 already.
			return nil, engine.NoTasksError(), true
		}
		return nil, nil, false
	}
	res, err := f.launch(ctx, p, replies, func(ctx context.Context) (*mcp.CallToolResult, error) { return next(ctx, req) })
	return res, err, true
}

// launch creates a task of the call p that runs work
// (engine.Tasks.Launch), and returns the result that the transport
// replaces with the task (taskReplies).
func (f *Server) launch(ctx context.Context, p *peer, replies *taskReplies, work func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	tp := *p
	tp.info.ProgressToken = nil // the call has its answer: nobody follows its progress
	created, err := f.eng.Tasks().Launch(ctx, &tp, func(ctx context.Context) (json.RawMessage, error) {
		res, err := work(context.WithValue(ctx, serverKey{}, f))
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		out := *res
		out.ResultType = mcp.ResultTypeComplete
		return json.Marshal(out)
	})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(created)
	if err != nil {
		return nil, err
	}
	return replies.placeholder(b), nil
}

// escalated answers a call whose handler returned StartTask's error with
// a task that runs its work; ok is false for any other outcome.
func (f *Server) escalated(ctx context.Context, p *peer, err error) (_ *mcp.CallToolResult, _ error, ok bool) {
	var ts *taskStart
	if !errors.As(err, &ts) {
		return nil, nil, false
	}
	replies := repliesFrom(ctx)
	if replies == nil {
		return nil, errUnchecked, true
	}
	res, err := f.launch(ctx, p, replies, ts.work)
	return res, err, true
}

// installTaskHooks advertises the extension in server/discover, and
// execution.taskSupport in tools/list, once a tool runs as a task. It is
// not advertised in initialize: the extension is served on 2026-07-28
// requests only (the transport reads a request's declaration in its
// _meta; it cannot see what a session declared at initialize).
func (f *Server) installTaskHooks(hooks *server.Hooks) {
	extend := func(c *mcp.ServerCapabilities) {
		if !f.tasks.Enabled() {
			return
		}
		// The map is the server's own: a copy is changed.
		ext := maps.Clone(c.Extensions)
		if ext == nil {
			ext = map[string]any{}
		}
		ext[engine.TasksExtension] = map[string]any{}
		c.Extensions = ext
	}
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		if res != nil {
			extend(&res.Capabilities)
		}
	})
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if res == nil || !f.tasks.Enabled() {
			return
		}
		tools := slices.Clone(res.Tools)
		for i := range tools {
			if support, ok := f.tasks.Support(tools[i].Name); ok {
				tools[i].Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupport(support)}
			}
		}
		res.Tools = tools
	})
}

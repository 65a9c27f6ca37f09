package mcpgo

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"sync"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/clientid"
	"github.com/elicitvault/elicitvault/internal/elicitlink"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Options configures a Server; nil means the defaults.
type Options struct {
	// Subject returns the authenticated user of the request whose context
	// is ctx, or "" without authentication. mcp-go has no notion of an
	// authenticated user: a server that authenticates its clients (an
	// http.Handler in front of Handler, which leaves the user in the
	// request's context) must set it, so that each user's elicitations,
	// requestStates and pending quotas are bound to that user. It is
	// called with the HTTP request's context before mcp-go runs (the
	// requestState check) and with the tool handler's, which derives from
	// it; over stdio, with ServeStdio's ctx.
	Subject func(ctx context.Context) string

	// TrustedProxies are the addresses of the proxies in front of
	// Handler. A client without an authenticated user (Subject) on a
	// stateless request (2026-07-28) is counted by its address against
	// the pending quotas (elicit.Config.MaxPendingPerSubject): the
	// request's peer address, or, when that is one of TrustedProxies, the
	// rightmost address of X-Forwarded-For that is not. Behind a proxy
	// every request comes from the proxy's address: list it here. List
	// only proxies that overwrite or append to X-Forwarded-For: a client
	// can write anything in the header. An IPv6 address counts as its /64.
	TrustedProxies []netip.Prefix
}

// Server is elicitvault on one mcp-go server: the elicitations of its
// tool handlers (elicit.Confirm, elicit.Form, elicit.URL) go through the
// Elicitor given to New, on every protocol version mcp-go serves.
type Server struct {
	ev   *elicit.Elicitor
	eng  *engine.Engine
	m    *server.MCPServer
	opts Options

	client func(*http.Request) string // the address of a request's client (Options.TrustedProxies)

	tasks  engine.TaskTools // the tools that run as tasks (RunAsTask)
	locals sync.Map         // server.ClientSession → its process-local session ID
	whos   sync.Map         // session → engine.Identity of its calls, for EndCalls
	levels sync.Map         // server.ClientSession → struct{}: it set a logging level
}

var (
	errNoSession = errors.New("elicit: the tool call has no mcp-go session")
	errUnchecked = errors.New("elicit: the requestState was not checked: serve the mcp-go server with mcpgo's Handler or ServeStdio")
	// errSessionEnded ends the waits of a session that ended.
	errSessionEnded = elicit.ErrSessionEnded
)

// New returns the front-end of ev for the mcp-go server m, and installs
// it there with mcp-go's own means: a tool handler middleware
// (MCPServer.Use), which runs every tool call through the Elicitor, and
// hooks (server.WithHooks, or the server's own Hooks when it has some)
// that end a session's waiting elicitations when the session ends. Serve
// m with Handler, or ServeStdio, for the requestState check of
// 2026-07-28.
func New(ev *elicit.Elicitor, m *server.MCPServer, opts *Options) *Server {
	f := &Server{ev: ev, eng: elicitlink.Engine(ev), m: m}
	if opts != nil {
		f.opts = *opts
	}
	f.client = clientid.Of(f.opts.TrustedProxies)
	m.Use(f.middleware)
	if f.eng.ListsFallbackTool(false, false) {
		// Listed to the clients that need it; a call never reaches this
		// handler (the middleware answers it).
		m.AddTool(fallbackTool(), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("elicit: the fallback tool is answered by the middleware")
		})
		server.WithToolFilter(f.listFallback)(m)
	}
	hooks := m.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(m)
	}
	hooks.AddOnUnregisterSession(f.sessionEnded)
	f.installTaskHooks(hooks)
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if s := server.ClientSessionFromContext(ctx); s != nil {
			f.levels.Store(s, struct{}{})
		}
	})
	return f
}

// middleware runs a tool call of m through the engine: Begin before the
// handler (unless the transport began it), Finish after, and the Stop
// rendered as mcp-go's result; a call of the fallback tool is answered by
// the engine.
func (f *Server) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		state := req.Params.RequestState
		modern := server.IsModernRequest(ctx)
		if !modern {
			state = "" // before 2026-07-28 nothing reads one
		}
		if !engine.OwnsState(state) {
			return next(ctx, req) // someone else's: the handler alone
		}
		info, session, err := f.callInfo(ctx, &req)
		if err != nil {
			return nil, err
		}
		if info.Who.HasSession() {
			// Stored once per session and identity, not on every call.
			if v, ok := f.whos.Load(info.Who.Session); !ok || v.(engine.Identity) != info.Who {
				f.whos.Store(info.Who.Session, info.Who)
			}
		}
		if req.Params.Name == engine.FallbackTool && f.eng.ListsFallbackTool(false, false) {
			return f.answer(ctx, &peer{m: f.m, session: session, info: info}, req)
		}
		if res, err, ok := f.taskCall(ctx, &peer{m: f.m, session: session, info: info}, req, next); ok {
			return res, err
		}
		var (
			p    *peer
			hctx context.Context
			run  *engine.Run
		)
		if state != "" {
			b := takeBegun(ctx, state)
			if b == nil || b.peer.info.Who != info.Who {
				// Nothing checked it: m is served without Handler or
				// ServeStdio, or the request was too large to read.
				if b != nil {
					b.run.End(ctx)
				}
				return nil, errUnchecked
			}
			p, run = b.peer, b.run
			p.session = session
			var cancel context.CancelFunc
			hctx, cancel = merge(ctx, b.ctx)
			defer cancel()
		} else {
			p = &peer{m: f.m, session: session, info: info}
			if hctx, run, err = f.eng.Begin(ctx, p, "", nil); err != nil {
				return nil, err
			}
		}
		defer run.End(hctx)
		res, err := next(context.WithValue(hctx, serverKey{}, f), req)
		stop, serr := run.Finish(hctx, err)
		switch {
		case serr != nil:
			return nil, serr
		case stop != nil:
			return render(stop)
		}
		// A handler that asked for its call to go on as a task
		// (StartTask), after its rounds: the task starts from mcp-go's
		// context (Finish ended the run's).
		if tres, terr, ok := f.escalated(ctx, p, err); ok {
			return tres, terr
		}
		return res, err
	}
}

// merge returns the handler's context of a call the transport began: a
// child of begin (the engine's values, its cancellation and cause), done
// also when ctx (mcp-go's) is, whose values it has besides.
func merge(ctx, begin context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(begin)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return valuesOf{out, ctx}, func() {
		stop()
		cancel(nil)
	}
}

// valuesOf is a context that looks up the values its own chain lacks in
// more.
type valuesOf struct {
	context.Context
	more context.Context
}

func (v valuesOf) Value(key any) any {
	if x := v.Context.Value(key); x != nil {
		return x
	}
	return v.more.Value(key)
}

// endSession ends the waiting calls of the session id.
func (f *Server) endSession(id string) {
	if v, ok := f.whos.LoadAndDelete(id); ok {
		f.eng.EndCalls(v.(engine.Identity), errSessionEnded)
	}
}

// sessionEnded forgets an ended session and ends what it left pending.
func (f *Server) sessionEnded(_ context.Context, session server.ClientSession) {
	f.levels.Delete(session)
	id := ""
	if v, ok := f.locals.LoadAndDelete(session); ok {
		id = v.(string)
	} else if _, http := session.(server.SessionWithStreamableHTTPConfig); http && session.SessionID() != "" {
		id = engine.TransportSession(session.SessionID())
	}
	if id == "" {
		return
	}
	f.endSession(id)
	f.eng.SessionEnded(id)
}

package mcpgo

import (
	"context"
	"errors"
	"sync"

	"github.com/elicitvault/elicitvault/elicit"
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
}

// Server is elicitvault on one mcp-go server: the elicitations of its
// tool handlers (elicit.Confirm, elicit.Form, elicit.URL) go through the
// Elicitor given to New, on every protocol version mcp-go serves.
type Server struct {
	ev   *elicit.Elicitor
	eng  *engine.Engine
	m    *server.MCPServer
	opts Options

	locals sync.Map // server.ClientSession → its process-local session ID
	levels sync.Map // server.ClientSession → struct{}: it set a logging level
}

var (
	errNoSession = errors.New("elicit: the tool call has no mcp-go session")
	errUnchecked = errors.New("elicit: the requestState was not checked: serve the mcp-go server with mcpgo's Handler or ServeStdio")
)

// New returns the front-end of ev for the mcp-go server m, and installs
// it there with mcp-go's own means: a tool handler middleware
// (MCPServer.Use), which runs every tool call through the Elicitor, and
// hooks (server.WithHooks, or the server's own Hooks when it has some)
// that end a session's waiting elicitations when the session ends. Serve
// m with Handler, or ServeStdio, for the requestState check of
// 2026-07-28.
func New(ev *elicit.Elicitor, m *server.MCPServer, opts *Options) *Server {
	f := &Server{ev: ev, eng: ev.Engine(), m: m}
	if opts != nil {
		f.opts = *opts
	}
	m.Use(f.middleware)
	hooks := m.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(m)
	}
	hooks.AddOnUnregisterSession(f.sessionEnded)
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if s := server.ClientSessionFromContext(ctx); s != nil {
			f.levels.Store(s, struct{}{})
		}
	})
	return f
}

// middleware runs a tool call of m: it builds the call's peer (identity,
// capabilities) and gives the handler the context elicitvault's calls
// read it from, with the requestState the transport claimed for it.
func (f *Server) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		info, session, err := f.callInfo(ctx, &req)
		if err != nil {
			return nil, err
		}
		cl := takeClaim(ctx, req.Params.RequestState)
		if cl == nil && server.IsModernRequest(ctx) && ours(req.Params.RequestState) {
			// Nothing checked it: m is served without Handler or
			// ServeStdio, or the request was too large to read.
			return nil, errUnchecked
		}
		if cl != nil && !cl.matches(info.Who) {
			// Claimed for another identity than the call's: a Subject
			// that reads something else in the handler's context.
			cl.release(ctx)
			cl = nil
		}
		p := &peer{m: f.m, session: session, info: info}
		ctx = engine.WithPeer(elicit.NewContext(ctx, f.ev, nil), p)
		res, err := next(withClaim(ctx, cl), req)
		if cl != nil {
			cl.release(ctx)
		}
		return res, err
	}
}

// sessionEnded forgets an ended session and ends what it left pending.
func (f *Server) sessionEnded(_ context.Context, session server.ClientSession) {
	f.levels.Delete(session)
	if v, ok := f.locals.LoadAndDelete(session); ok {
		f.eng.SessionEnded(v.(string))
		return
	}
	if _, http := session.(server.SessionWithStreamableHTTPConfig); http && session.SessionID() != "" {
		f.eng.SessionEnded(engine.TransportSession(session.SessionID()))
	}
}

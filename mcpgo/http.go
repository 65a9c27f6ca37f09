package mcpgo

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/clientid"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Handler returns the HTTP handler of the server: MCP over Streamable
// HTTP at elicit.MCPPath, served by mcp-go (server.NewStreamableHTTPServer
// with opts, at that path) behind the requestState check of 2026-07-28
// (and with the "still waiting" results of URL-mode rounds as clients
// read them), and beside it, under elicit.PagesPrefix, the pages a
// browser opens: the consent page of URL mode and the browser form. user
// returns the browser's authenticated user on the pages (see
// elicit.Elicitor.Pages); a server that authenticates its MCP clients
// must set it for URL mode to work.
//
// mcp-go's Streamable HTTP server logs nothing unless opts give it a
// logger (server.WithStreamableHTTPLogger): its lines name session IDs.
//
// A server that authenticates its clients puts its check in front of the
// returned handler, or of the MCP endpoint alone, and leaves the user in
// the request's context for Options.Subject. A client without a user is
// counted by its address against the pending quotas on a stateless
// request (see Options.TrustedProxies).
func (f *Server) Handler(user func(*http.Request) (subject string, ok bool), opts ...server.StreamableHTTPOption) http.Handler {
	// mcp-go's own log lines name sessions: none unless opts set a logger.
	opts = append([]server.StreamableHTTPOption{server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))}, opts...)
	opts = append(opts, server.WithEndpointPath(elicit.MCPPath))
	mux := http.NewServeMux()
	// An anonymous stateless caller's pending elicitations count against
	// its address, as on the go-sdk's Handler: in the request's context
	// before the check, which may begin the call.
	mcpHandler := f.checkHTTP(restoreWaitingHTTP(server.NewStreamableHTTPServer(f.m, opts...)))
	mux.Handle(elicit.MCPPath, clientid.Handler(f.clientAddr, mcpHandler))
	mux.Handle(elicit.PagesPrefix, f.ev.Pages(user))
	return mux
}

// clientAddr is the key of the client of r that the pending quotas count
// an anonymous stateless call against (engine.Identity.Client ignores it
// for a call with a subject or a session).
func (f *Server) clientAddr(r *http.Request) string {
	return clientid.Addr(r, f.client)
}

// ServeStdio serves MCP on in and out (os.Stdin and os.Stdout for a
// server a client starts) until in ends or ctx is done, checking the
// requestState of every line before mcp-go reads it. The connection is
// one session: its state is bound to a process-local ID, which ends with
// it. opts configure mcp-go's StdioServer.
//
// The pages of URL mode and of the browser form are not on stdio: serve
// the Elicitor's Pages on a listener of their own (loopback for a local
// server) and set elicit.Config.BaseURL to its address.
func (f *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts ...server.StdioOption) error {
	local := engine.LocalSession()
	defer func() {
		f.endSession(local)
		f.eng.EndCalls(engine.Identity{Subject: f.subject(ctx), Session: local}, errSessionEnded)
		f.eng.SessionEnded(local)
	}()
	who := engine.Identity{Subject: f.subject(ctx), Session: local}
	table := &begins{}
	ctx = context.WithValue(ctx, stdioKey{}, local)
	ctx = context.WithValue(ctx, begunKey{}, table)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	replies := &taskReplies{}
	ctx = context.WithValue(ctx, repliesKey{}, replies)
	w := &lockedWriter{w: out, replies: replies}
	ctx = context.WithValue(ctx, stdioOutKey{}, w)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(f.checkLines(ctx, in, pw, w, who, table))
	}()
	defer pr.Close()
	s := server.NewStdioServer(f.m)
	for _, o := range opts {
		o(s)
	}
	return s.Listen(ctx, pr, waitingWriter{w})
}

// lockedWriter writes each Write whole: mcp-go writes a message per
// Write, and the check's refusals go between them. It writes a task in
// the place of a tool call's response that became one (taskReplies).
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	replies *taskReplies
}

// notify writes the notification n, a line of its own, at once.
// mcp-go's stdio server writes the notifications it is sent from a
// goroutine of its own, and a tool call's response from the call's: one
// sent just before the handler returns may come after the response.
// Written by the handler through notify, it comes before.
func (l *lockedWriter) notify(n mcp.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(l.replies.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

package elicit

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where Handler serves MCP over Streamable HTTP.
const MCPPath = "/mcp"

// HandlerOptions configures Handler; nil means the defaults.
type HandlerOptions struct {
	// User returns the browser's authenticated user on the URL-mode pages
	// (see Pages). A server that authenticates its MCP clients must set
	// it for URL mode to work.
	User func(r *http.Request) (subject string, ok bool)

	// MCP, when set, wraps the MCP endpoint alone, for example with the
	// go-sdk's auth.RequireBearerToken; the pages are for browsers and
	// are not wrapped.
	MCP func(http.Handler) http.Handler

	// SessionTimeout closes a stateful session (protocols before
	// 2026-07-28) that has been idle this long: no request of it in
	// flight, no stream open (DefaultSessionTimeout when zero). Its
	// waiting calls end with ErrSessionEnded.
	SessionTimeout time.Duration

	// MaxSessions bounds the live stateful sessions of the Handler, and
	// MaxSessionsPerClient those of one client: its authenticated user
	// (auth.TokenInfo's UserID, see MCP) or, without one, its address
	// (see Client). A new session over either bound closes the oldest
	// idle session (the client's own first; its waiting calls end with
	// ErrSessionEvicted); when none is idle the new session is refused
	// with HTTP 429 (the client's bound) or 503 (the total) and a
	// JSON-RPC error. DefaultMaxSessions and DefaultMaxSessionsPerClient
	// when zero. The bounds are per Handler (per node): sessions live on
	// the node that created them.
	MaxSessions, MaxSessionsPerClient int

	// Client returns the address of the client that sent r ("ip" or
	// "ip:port"), for MaxSessionsPerClient when r has no authenticated
	// user: r.RemoteAddr when nil. Behind a proxy every request comes
	// from the proxy's address: use ForwardedFor with the proxies'
	// addresses. An IPv6 address counts as its /64.
	Client func(r *http.Request) string

	// ReadTimeout bounds the time a request's body may take to arrive,
	// from the start of the handler (the headers are the http.Server's
	// ReadHeaderTimeout), on /mcp and on the pages; 30 seconds when zero,
	// none when negative. Once the body is read, the request may stream
	// its response for as long as it needs: the deadline is lifted, and
	// an http.Server's ReadTimeout, which would otherwise cancel a long
	// request when it passes, with it.
	ReadTimeout time.Duration

	// WriteTimeout bounds each write of a response: a client that stops
	// reading is cut off after it, while a stream (SSE, a blocking
	// elicitation) stays open for as long as its writes go through; 30
	// seconds when zero, none when negative. It replaces an
	// http.Server's WriteTimeout, which would cut every stream at the
	// same age.
	WriteTimeout time.Duration
}

// Handler returns the HTTP handler of an MCP server s on which the Elicitor
// is installed: MCP over Streamable HTTP at MCPPath on every protocol
// version, and the pages of URL mode under PagesPrefix.
//
// The go-sdk serves 2026-07-28 from a stateless handler only, and a
// stateless handler cannot send the requests to the client that
// elicitation on the older versions needs, so Handler routes each request
// by its Mcp-Protocol-Version header: 2026-07-28 and later to a stateless
// handler (elicitations become input requests), the rest (initialize
// included) to a stateful one with sessions, which ends after
// SessionTimeout idle, and whose DELETE ends its waiting calls
// (EndSessionOnDelete). Sessions are bounded per client and in total
// (MaxSessions); an idle one holds a goroutine of the go-sdk's (its
// reader) and none of the Handler's. Every request has a deadline for its
// body and each write of its response one of its own (ReadTimeout,
// WriteTimeout), which let long streams live. Both refuse a loopback listener's requests whose
// Host is not a loopback name. Malformed inputResponses get -32602 naming
// the key (see CheckInputResponses).
//
// To stop, call Close on the Elicitor: it ends every waiting elicitation
// (cancelled at the client), then shut the http.Server down.
func (e *Elicitor) Handler(s *mcp.Server, opts *HandlerOptions) http.Handler {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	server := func(*http.Request) *mcp.Server { return s }
	// The session table closes idle sessions itself, ending their waiting
	// calls first: the go-sdk closes a session only once its calls
	// returned. So does a DELETE (EndSessionOnDelete).
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	// The go-sdk's own idle timeout, which counts only POSTs, is a
	// backstop for a session the table would not hold.
	sdk := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: 2 * o.SessionTimeout})
	caps := newSessionCap(e, e.EndSessionOnDelete(sdk), &o)
	s.AddReceivingMiddleware(caps.capture)
	// An anonymous stateless caller's pending elicitations count against
	// the client the session caps count too (HandlerOptions.Client).
	stateless := checkTaskHeaders(withClientID(o.Client, mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true})))
	endpoint := CheckInputResponses(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= ProtocolInputRequests {
			stateless.ServeHTTP(w, r)
			return
		}
		caps.ServeHTTP(w, r)
	}))
	if o.MCP != nil {
		endpoint = o.MCP(endpoint)
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, endpoint)
	mux.Handle(PagesPrefix, e.Pages(o.User))
	return withDeadlines(mux, o.ReadTimeout, o.WriteTimeout)
}

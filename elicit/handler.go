package elicit

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/elicitvault/elicitvault/internal/clientid"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where [Elicitor.Handler] serves MCP over Streamable HTTP.
const MCPPath = "/mcp"

// HandlerOptions configures Handler; nil means the defaults.
type HandlerOptions struct {
	// User returns the browser's authenticated user on the URL-mode pages
	// (see [Elicitor.Pages]). A server that authenticates its MCP clients
	// must set it for URL mode to work.
	User func(r *http.Request) (subject string, ok bool)

	// MCP, when set, wraps the MCP endpoint alone, for example with the
	// go-sdk's auth.RequireBearerToken; the pages are for browsers and
	// are not wrapped.
	MCP func(http.Handler) http.Handler

	// SessionTimeout closes a stateful session (protocols before
	// 2026-07-28) that has been idle this long: no request of it in
	// flight, no stream open (30 minutes when zero). Its waiting calls end
	// with [ErrSessionEnded].
	SessionTimeout time.Duration

	// MaxSessions bounds the live stateful sessions of the Handler, and
	// MaxSessionsPerClient those of one client: its authenticated user
	// (auth.TokenInfo's UserID, see MCP) or, without one, its address
	// (see TrustedProxies). A new session over either bound closes the
	// oldest idle session (the client's own first; its waiting calls end
	// with [ErrSessionEnded]); when none is idle the new session is
	// refused with HTTP 429 (the client's bound) or 503 (the total) and a
	// JSON-RPC error. 5000 and 32 when zero (the go-sdk keeps a goroutine
	// and about 15 KiB per session). The bounds are per Handler (per
	// node): sessions live on the node that created them.
	MaxSessions, MaxSessionsPerClient int

	// TrustedProxies are the addresses of the proxies in front of the
	// server. A client without an authenticated user is counted by its
	// address (MaxSessionsPerClient, [Config.MaxPendingPerSubject]): the
	// request's peer address, or, when that is one of TrustedProxies, the
	// rightmost address of X-Forwarded-For that is not. Behind a proxy
	// every request comes from the proxy's address: list it here. List
	// only proxies that overwrite or append to X-Forwarded-For: a client
	// can write anything in the header. An IPv6 address counts as its /64.
	TrustedProxies []netip.Prefix

	// ReadTimeout bounds the time a request's body may take to arrive,
	// from the start of the handler (the headers are the http.Server's
	// ReadHeaderTimeout), on MCPPath and on the pages; 30 seconds when zero,
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
// is installed ([Elicitor.Install]): MCP over Streamable HTTP at [MCPPath]
// on every protocol version, and the pages of URL mode under
// [PagesPrefix]. opts may be nil.
//
// The go-sdk serves 2026-07-28 from a stateless handler only, and a
// stateless handler cannot send the requests to the client that
// elicitation on the older versions needs, so Handler routes each request
// by its Mcp-Protocol-Version header: 2026-07-28 and later to a stateless
// handler (elicitations become input requests), the rest (initialize
// included) to a stateful one with sessions, which ends after
// SessionTimeout idle, and whose DELETE ends its waiting calls
// ([ErrSessionEnded]). Sessions are bounded per client and in total
// (MaxSessions); an idle one holds a goroutine of the go-sdk's (its
// reader) and none of the Handler's. Every request has a deadline for its
// body and each write of its response one of its own (ReadTimeout,
// WriteTimeout), which let long streams live. Both refuse a loopback listener's requests whose
// Host is not a loopback name. Malformed inputResponses get -32602 naming
// the key, and nothing else of the request.
//
// To stop, call [Elicitor.Close]: it ends every waiting elicitation
// (cancelled at the client), then shut the http.Server down.
func (e *Elicitor) Handler(s *mcp.Server, opts *HandlerOptions) http.Handler {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	server := func(*http.Request) *mcp.Server { return s }
	// The session table closes idle sessions itself, ending their waiting
	// calls first: the go-sdk closes a session only once its calls
	// returned. So does a DELETE (endSessionOnDelete).
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = defaultSessionTimeout
	}
	// The go-sdk's own idle timeout, which counts only POSTs, is a
	// backstop for a session the table would not hold.
	sdk := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: 2 * o.SessionTimeout})
	caps := newSessionCap(e, e.endSessionOnDelete(sdk), &o)
	s.AddReceivingMiddleware(caps.capture)
	// An anonymous stateless caller's pending elicitations count against
	// the client the session caps count too (HandlerOptions.TrustedProxies).
	stateless := checkTaskHeaders(withClientID(clientid.Of(o.TrustedProxies), mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true})))
	endpoint := checkHTTPInputResponses(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= engine.ProtocolInputRequests {
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

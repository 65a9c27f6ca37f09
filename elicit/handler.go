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
	// 2026-07-28) that has been idle this long; 30 minutes when zero.
	SessionTimeout time.Duration
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
// (EndSessionOnDelete). Both refuse a loopback listener's requests whose
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
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	server := func(*http.Request) *mcp.Server { return s }
	// A DELETE ends the session's waiting calls first: the go-sdk closes
	// a session only once its calls returned.
	stateful := e.EndSessionOnDelete(mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout}))
	stateless := e.withClientID(mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true}))
	endpoint := CheckInputResponses(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= ProtocolInputRequests {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
	if o.MCP != nil {
		endpoint = o.MCP(endpoint)
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, endpoint)
	mux.Handle(PagesPrefix, e.Pages(o.User))
	return mux
}

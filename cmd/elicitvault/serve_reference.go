package main

import (
	"context"
	"github.com/elicitvault/elicitvault/keyring"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The paths the reference server serves besides /mcp.
const (
	pathConnect  = "/elicit/connect"  // the consent page of connect_account
	pathCallback = "/elicit/callback" // completes URL-mode elicitations
)

type referenceOptions struct {
	// BaseURL is the URL browsers reach the HTTP listener by, without a
	// trailing slash.
	BaseURL string
	// TTL is how long an elicitation waits (elicit.DefaultTTL when zero).
	TTL time.Duration
	// Fallbacks are the Elicitor's, for clients that cannot elicit.
	Fallbacks []elicit.Fallback
}

// reference is the reference MCP server: the go-sdk server with the
// Elicitor installed and the demo tools, and the pages of URL mode.
type reference struct {
	server *mcp.Server
	ev     *elicit.Elicitor
	tokens *token.Service
	base   string

	// stopping is done when the server stops: every request's context
	// is cancelled with it, so that waiting elicitations end.
	stopping context.Context
	stop     context.CancelFunc
}

func newReference(keys *ring.Keyring, st store.Store, o *referenceOptions) (*reference, error) {
	tokens, err := token.NewService(keys, st)
	if err != nil {
		return nil, err
	}
	// The fallbacks need nothing of the tools: the Elicitor lists and
	// serves sendElicitationResult itself, to the clients that need it.
	ev, err := elicit.New((*keyring.Keyring)(keys), st, &elicit.Config{TTL: o.TTL, Tokens: tokens, Fallbacks: o.Fallbacks})
	if err != nil {
		return nil, err
	}
	server := mcp.NewServer(&mcp.Implementation{
		Name:    "elicitvault",
		Title:   "elicitvault reference server",
		Version: moduleVersion(),
	}, &mcp.ServerOptions{
		Instructions: "The tools of this server ask the user for input with MCP elicitation: " +
			"confirmations (delete_contacts, which only the user may give; subscribe_newsletter), a form (register_attendee) and an account connection " +
			"in the browser (connect_account). Nothing they do leaves the server.",
	})
	r := &reference{server: server, ev: ev, tokens: tokens, base: strings.TrimRight(o.BaseURL, "/")}
	r.stopping, r.stop = context.WithCancel(context.Background())
	server.AddReceivingMiddleware(r.cancelOnStop)
	ev.Install(server)
	r.addTools()
	return r, nil
}

// cancelOnStop is a receiving middleware: a request's context ends when
// the server stops.
func (r *reference) cancelOnStop(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(r.stopping, cancel)()
		return next(ctx, method, req)
	}
}

// mcpHandler serves MCP over Streamable HTTP, on every protocol version.
//
// The go-sdk serves 2026-07-28 only from a stateless handler, and a
// stateless handler cannot send requests to the client, which
// elicitation/create on the older versions needs. So a request is routed
// by its Mcp-Protocol-Version header: 2026-07-28 and later to a stateless
// handler (elicitations become input requests), the rest (initialize
// included, which carries no header) to a stateful one with session IDs.
//
// Both refuse requests to a loopback listener whose Host header is not a
// loopback name (DNS rebinding).
func (r *reference) mcpHandler() http.Handler {
	server := func(*http.Request) *mcp.Server { return r.server }
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Protocol-Version") >= elicit.ProtocolInputRequests {
			stateless.ServeHTTP(w, req)
			return
		}
		stateful.ServeHTTP(w, req)
	})
}

// mountPages adds the pages of URL mode to mux.
func (r *reference) mountPages(mux *http.ServeMux) {
	mux.Handle(pathCallback, r.ev.CallbackHandler(nil))
	mux.Handle(pathConnect, &consentPage{tokens: r.tokens})
}

// connectLink is the link builder of connect_account: the consent page,
// with the callback token in its query.
func (r *reference) connectLink(tok string) string {
	return elicit.CallbackURL(r.base + pathConnect)(tok)
}

// shutdown ends every request in progress (a waiting elicitation ends
// and cleans up after itself), then closes every MCP session, which ends
// their open streams. It gives up when ctx is done.
func (r *reference) shutdown(ctx context.Context) {
	r.stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ss := range r.server.Sessions() {
			ss.Close()
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// moduleVersion is the version of the build, "(devel)" from a checkout.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

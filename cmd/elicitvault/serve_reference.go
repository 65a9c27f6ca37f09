package main

import (
	"context"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/elicitvault/elicitvault/store"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type referenceOptions struct {
	// BaseURL is the URL browsers reach the HTTP listener by, without a
	// trailing slash.
	BaseURL string
	// TTL is how long an elicitation waits (5 minutes when zero).
	TTL time.Duration
	// URLRoundWait is elicit.Config's.
	URLRoundWait time.Duration
	// Fallbacks are the Elicitor's, for clients that cannot elicit.
	Fallbacks []elicit.Fallback
	// OAuth, when set, is the provider connect_account connects to.
	OAuth *oauth.Provider
	// Hooks are given to the Elicitor (telemetry).
	Hooks []elicit.Hooks
	// Conformance adds the conformance suite's fixtures
	// (serve_conformance.go).
	Conformance bool
	// HTTP configures elicit.Handler: session caps and timeouts.
	HTTP elicit.HandlerOptions
	// SDK is the MCP SDK that serves: sdkGo (when empty) or sdkMCPGo.
	SDK string
}

// reference is the reference MCP server: the go-sdk server with the
// Elicitor installed and the demo tools.
type reference struct {
	server *mcp.Server
	ev     *elicit.Elicitor

	// mg, with --sdk mcp-go, is the mcp-go server that serves, with the
	// same tools as server (addTool), through front.
	mg    *mgserver.MCPServer
	front *mcpgo.Server

	// oauth connects accounts at provider when one is configured.
	oauth    *oauth.Connector
	provider string

	// fixtureState seals the requestState of the conformance fixture that
	// asks for more than elicitation (serve_conformance.go), valid for ttl.
	fixtureState *token.Service
	ttl          time.Duration

	httpOpts elicit.HandlerOptions
}

const instructions = "The tools of this server ask the user for input with MCP elicitation: " +
	"confirmations (delete_contacts, which only the user may give; subscribe_newsletter), a form (register_attendee) and an account connection " +
	"in the browser (connect_account). Nothing they do leaves the server."

// serverTitle is the reference server's name for people.
const serverTitle = "elicitvault reference server"

func newReference(keys *keyring.Keyring, st store.Store, o *referenceOptions) (*reference, error) {
	// The fallbacks need nothing of the tools: the Elicitor lists and
	// serves sendElicitationResult itself, to the clients that need it.
	// The consent page names the server as its Implementation's title.
	cfg := &elicit.Config{TTL: o.TTL, URLRoundWait: o.URLRoundWait, BaseURL: o.BaseURL, Fallbacks: o.Fallbacks, Hooks: o.Hooks, ServerName: serverTitle}
	ev, err := elicit.New(keys, st, cfg)
	if err != nil {
		return nil, err
	}
	server := mcp.NewServer(&mcp.Implementation{
		Name:    "elicitvault",
		Title:   serverTitle,
		Version: moduleVersion(),
	}, &mcp.ServerOptions{Instructions: instructions})
	r := &reference{server: server, ev: ev, ttl: o.TTL, httpOpts: o.HTTP}
	if r.ttl <= 0 {
		r.ttl = 5 * time.Minute
	}
	if o.OAuth != nil {
		if r.oauth, err = newConnector(ev, keys, st, strings.TrimRight(o.BaseURL, "/"), o.OAuth); err != nil {
			return nil, err
		}
		r.provider = o.OAuth.Name
	}
	server.AddReceivingMiddleware(servedAsDeclared(o.Conformance))
	ev.Install(server)
	if o.SDK == sdkMCPGo {
		r.newMCPGo()
	}
	r.addTools()
	if o.Conformance {
		if r.fixtureState, err = token.NewService((*ring.Keyring)(keys), st); err != nil {
			return nil, err
		}
		r.addConformanceTools()
		r.addConformanceTaskTools()
		if r.mg != nil {
			r.addMCPGoConformance()
		}
	}
	if path := os.Getenv(probeEnv); path != "" {
		r.addProbe(path)
	}
	return r, nil
}

// servedAsDeclared returns a receiving middleware: the methods of the
// capabilities the server does not declare are not found (-32601), so
// that what initialize and server/discover declare is what is served.
// The go-sdk declares resources, completions and prompts only when the
// server has some, but answers their methods either way (an empty list, a
// validation error); this server has no resources or completions, and a
// prompt only with the conformance fixtures.
func servedAsDeclared(prompts bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "resources/") || method == "completion/complete" ||
				(!prompts && strings.HasPrefix(method, "prompts/")) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
			}
			return next(ctx, method, req)
		}
	}
}

// handler serves MCP and the pages of URL mode (elicit.Handler) and, with
// a provider, the start page and callback of connect_account.
func (r *reference) handler() http.Handler {
	var h http.Handler
	if r.front != nil {
		h = r.mcpgoHandler()
	} else {
		h = r.ev.Handler(r.server, &r.httpOpts)
	}
	if r.oauth == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	oh := r.oauth.Handler()
	mux.Handle(pathOAuthStart, oh)
	mux.Handle(pathOAuthCallback, oh)
	return mux
}

// moduleVersion is the version of the build, "(devel)" from a checkout.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

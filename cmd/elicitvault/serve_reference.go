package main

import (
	"runtime/debug"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// Elicitor installed and the demo tools.
type reference struct {
	server *mcp.Server
	ev     *elicit.Elicitor
}

func newReference(keys *keyring.Keyring, st store.Store, o *referenceOptions) (*reference, error) {
	// The fallbacks need nothing of the tools: the Elicitor lists and
	// serves sendElicitationResult itself, to the clients that need it.
	ev, err := elicit.New(keys, st, &elicit.Config{TTL: o.TTL, BaseURL: o.BaseURL, Fallbacks: o.Fallbacks})
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
	r := &reference{server: server, ev: ev}
	ev.Install(server)
	r.addTools()
	return r, nil
}

// moduleVersion is the version of the build, "(devel)" from a checkout.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

package elicit

import (
	"context"
	"net/http"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// Defaults of the pending quotas of Config.
const (
	defaultMaxPending                = 10000
	defaultMaxPendingPerSubject      = 100
	defaultMaxPendingBytes           = 64 << 20
	defaultMaxPendingBytesPerSubject = 2 << 20
)

// limits are the pending quotas of cfg, with the defaults.
func limits(cfg *Config) engine.Limits {
	l := engine.Limits{
		Max: cfg.MaxPending, PerClient: cfg.MaxPendingPerSubject,
		MaxBytes: cfg.MaxPendingBytes, PerClientBytes: cfg.MaxPendingBytesPerSubject,
	}
	if l.Max <= 0 {
		l.Max = defaultMaxPending
	}
	if l.PerClient <= 0 {
		l.PerClient = defaultMaxPendingPerSubject
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxPendingBytes
	}
	if l.PerClientBytes <= 0 {
		l.PerClientBytes = defaultMaxPendingBytesPerSubject
	}
	return l
}

// clientID is the client ID ctx carries (contextWithClientID), which the pending
// quotas count an unauthenticated call on a stateless server against
// (engine.Identity.Client).
func clientID(ctx context.Context) string {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return id
}

type clientIDKey struct{}

// contextWithClientID returns ctx carrying id, the identity of the client of an
// unauthenticated request on a stateless server (2026-07-28), which the
// Elicitor's pending quotas count per client (see Config.MaxPending). Handler
// does this for every request; a server that mounts the go-sdk's handler
// itself calls it in an HTTP middleware around it, with a value the
// client cannot choose (its address, or what a trusted proxy forwarded).
func contextWithClientID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientIDKey{}, id)
}

// withClientID wraps h, so that its requests carry their client's
// identity (contextWithClientID): the authenticated user, or the address client
// returns (see HandlerOptions.Client), as the session caps count it.
func withClientID(client func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := sessionClientOf(r, client)
		h.ServeHTTP(w, r.WithContext(contextWithClientID(r.Context(), id)))
	})
}

package elicit

import (
	"context"
	"net/http"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// Defaults of the pending quotas of Config.
const (
	// DefaultMaxPending bounds the elicitations pending on one Elicitor.
	DefaultMaxPending = 10000
	// DefaultMaxPendingPerSubject bounds the elicitations pending on one
	// Elicitor for one client: an authenticated user, else a session,
	// else its address as Handler sees it (HandlerOptions.Client).
	DefaultMaxPendingPerSubject = 100
	// DefaultMaxPendingBytes bounds the pending records of one Elicitor,
	// in bytes of their JSON encoding.
	DefaultMaxPendingBytes = 64 << 20
	// DefaultMaxPendingBytesPerSubject bounds the pending records of one
	// client on one Elicitor, in bytes.
	DefaultMaxPendingBytesPerSubject = 2 << 20
)

// limits are the pending quotas of cfg, with the defaults.
func limits(cfg *Config) engine.Limits {
	l := engine.Limits{
		Max: cfg.MaxPending, PerClient: cfg.MaxPendingPerSubject,
		MaxBytes: cfg.MaxPendingBytes, PerClientBytes: cfg.MaxPendingBytesPerSubject,
	}
	if l.Max <= 0 {
		l.Max = DefaultMaxPending
	}
	if l.PerClient <= 0 {
		l.PerClient = DefaultMaxPendingPerSubject
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxPendingBytes
	}
	if l.PerClientBytes <= 0 {
		l.PerClientBytes = DefaultMaxPendingBytesPerSubject
	}
	return l
}

// WithClientID returns ctx carrying id, the identity of the client of an
// unauthenticated request on a stateless server (2026-07-28), which the
// Elicitor's pending quotas count per client (see Config.MaxPending). Handler
// does this for every request; a server that mounts the go-sdk's handler
// itself calls it in an HTTP middleware around it, with a value the
// client cannot choose (its address, or what a trusted proxy forwarded).
func WithClientID(ctx context.Context, id string) context.Context {
	return engine.WithClientID(ctx, id)
}

// withClientID wraps h, so that its requests carry their client's
// identity (WithClientID): the authenticated user, or the address client
// returns (see HandlerOptions.Client), as the session caps count it.
func withClientID(client func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := sessionClientOf(r, client)
		h.ServeHTTP(w, r.WithContext(WithClientID(r.Context(), id)))
	})
}

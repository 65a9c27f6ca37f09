package elicit

import (
	"net/http"

	"github.com/elicitvault/elicitvault/internal/clientid"
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

// withClientID wraps h, so that its requests carry their client's
// identity (engine.WithClientID), which the pending quotas count an
// unauthenticated call on a stateless server against: the authenticated
// user, or the address client returns (HandlerOptions.TrustedProxies), as
// the session caps count it.
func withClientID(client func(*http.Request) string, h http.Handler) http.Handler {
	return clientid.Handler(func(r *http.Request) string {
		id, _ := sessionClientOf(r, client)
		return id
	}, h)
}

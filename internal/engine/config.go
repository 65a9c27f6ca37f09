package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
)

// Config is what a front-end's configuration says about every
// elicitation, in the engine's terms: elicit.New maps its Config onto it,
// defaults applied. Its functions let the engine reach what is package
// elicit's (its hooks, its context, the browser form's page).
type Config struct {
	// Limits are the pending quotas.
	Limits Limits
	// MaxContentSize bounds the JSON encoding of accepted content, and
	// MaxPendingSize that of a pending record, in bytes.
	MaxContentSize, MaxPendingSize int
	// ClaimLease is how long a claim on an answer holds its marker before
	// a resend may take it over (DefaultClaimLease when zero).
	ClaimLease time.Duration
	// Fallbacks are the fallbacks enabled (FallbackLLM, FallbackBrowser),
	// in order of preference.
	Fallbacks []string
	// ProgressInterval is how often a waiting elicitation reports
	// progress (ReportProgress); none when zero or negative.
	ProgressInterval time.Duration
	// URLRoundWait bounds the wait of a 2026-07-28 round for a URL-mode
	// page before it answers "still waiting"; zero waits until the TTL.
	URLRoundWait time.Duration
	// Logger receives the engine's warnings (slog.Default() when nil).
	Logger *slog.Logger

	// ServerName is how the consent page names the server: a URL-mode
	// pending record keeps it, with the message, for the page of any node.
	ServerName string

	// OpenBrowser, when set, is given the page of a BrowserForm fallback.
	OpenBrowser func(ctx context.Context, url string) error
	// Forms returns the server of the BrowserForm fallback's forms,
	// started on first use, or an error (the front-end was closed).
	Forms func() (FormServer, error)

	// Prepare returns ctx carrying what the front-end's calls need
	// besides the Peer (the Elicitor, for elicit.Form).
	Prepare func(ctx context.Context) context.Context
	// Carry returns what the hooks carry in a pending record (a trace
	// context); Resume resumes it on the node that resumes the
	// elicitation, and returns the function that ends that work.
	Carry  func(ctx context.Context) map[string]string
	Resume func(ctx context.Context, mode string, carried map[string]string) (context.Context, func(error))
}

// DefaultClaimLease is the default of Config.ClaimLease.
const DefaultClaimLease = token.DefaultClaimLease

func (c *Config) lease() time.Duration {
	if c.ClaimLease > 0 {
		return c.ClaimLease
	}
	return DefaultClaimLease
}

func (c *Config) prepare(ctx context.Context) context.Context {
	if c.Prepare == nil {
		return ctx
	}
	return c.Prepare(ctx)
}

func (c *Config) carry(ctx context.Context) map[string]string {
	if c.Carry == nil {
		return nil
	}
	return c.Carry(ctx)
}

func (c *Config) resume(ctx context.Context, mode string, carried map[string]string) (context.Context, func(error)) {
	if c.Resume == nil {
		return ctx, func(error) {}
	}
	return c.Resume(ctx, mode, carried)
}

package elicit

import (
	"context"
	"slices"
	"time"
)

// Fallback is a way to reach a user whose client cannot receive an
// elicitation in the mode it needs. Fallbacks are enabled per server
// (Config.Fallbacks) and may be narrowed per call (WithFallbacks).
//
// The order of a call is fixed where the client can elicit: native
// elicitation/create on 2025-06-18 and 2025-11-25, input requests on
// 2026-07-28. Only where it cannot are the fallbacks tried, in the order
// given, each only where it applies; then the call fails with an error
// matching ErrUnsupported. Both fallbacks serve form mode (Form and
// Confirm) and URL mode: LLMMediated gives the model the link, BrowserForm
// announces it to the user as it announces a form.
type Fallback string

const (
	// LLMMediated hands the question to the model: the tool call returns
	// instructions and _meta.elicitationPending (the elicitation ID, the
	// message and the requested schema), and the model, having asked the
	// user, calls the tool sendElicitationResult with the answer, which the
	// Elicitor lists only to clients that lack form mode or URL mode. That call is
	// checked against the sealed pending elicitation (same session, same
	// subject), validated, used once, and continues the original tool: its
	// handler runs again from the start with the answer in place, and the
	// call returns the tool's result. See the package documentation for
	// what running again means, and SaveState to carry progress.
	//
	// It applies to every call that has the Elicitor installed. The answer
	// comes from the model, which may have made it up: for a confirmation
	// that guards something dangerous, narrow the call to BrowserForm, or to
	// no fallback, with WithFallbacks.
	LLMMediated Fallback = "llm"

	// BrowserForm serves the form on 127.0.0.1, on a random port, for a
	// server that runs on the user's own machine: a page with a per-form
	// nonce in its URL, a verification code, one submission, every field
	// kind, validated again on the server. The page and the code are
	// announced as an MCP log message at level notice, and as a progress
	// notification when the call has a progress token; Config.OpenBrowser,
	// when set, is given the page too. The URL is never put in a tool
	// result, which the model reads: it carries the form's nonce. The call
	// waits for the answer, the TTL (ErrTimeout) or the end of ctx.
	//
	// It applies when the user can be told: the client set a logging level
	// of notice or below (logging/setLevel, or the request's _meta on
	// 2026-07-28), or the call has a progress token, or OpenBrowser is set.
	// Enable it only on a server whose user sits at the same machine.
	//
	// In URL mode it announces the link of the URL-mode page (the consent
	// page, or WithLink's) the same way, without a code, and the call
	// waits for the user's answer there.
	BrowserForm Fallback = "browser"
)

// WithFallbacks sets the fallbacks this call may use, in order, instead of
// the Elicitor's. Only fallbacks the Elicitor enables (Config.Fallbacks)
// are used; WithFallbacks() with none allows none.
func WithFallbacks(f ...Fallback) Option {
	return func(o *options) { o.fallbacks = append([]Fallback{}, f...) }
}

// enabled reports whether the Elicitor enables f.
func (e *Elicitor) enabled(f Fallback) bool { return slices.Contains(e.fallbacks, f) }

// policyPath is the request flow of a call whose client cannot receive
// the elicitation and no fallback applies: an *unsupportedError.
type policyPath struct{ e *Elicitor }

func (pa policyPath) deliver(ctx context.Context, _ *round, r *Request, _ time.Duration, _ *options) (*Response, error) {
	return nil, &unsupportedError{Mode: r.Mode}
}

// canAnnounce reports whether the user of a call can be told where a
// browser form is.
func (pa *browserPath) canAnnounce(c *Call) bool {
	e := pa.e
	if e.openBrowser != nil || c.info.ProgressToken != nil {
		return true
	}
	switch c.info.LogLevel {
	case "debug", "info", "notice":
		return true
	}
	return false
}

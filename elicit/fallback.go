package elicit

import (
	"slices"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// Fallback is a way to reach a user whose client cannot receive an
// elicitation in the mode it needs. Fallbacks are enabled per server
// ([Config].Fallbacks) and may be narrowed per call (WithFallbacks).
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
	// call returns the tool's result. See Reruns in the package
	// documentation for what running again means, and [SaveState] to
	// carry progress.
	//
	// It applies to every call that has the Elicitor installed. The answer
	// comes from the model, which may have made it up: for a confirmation
	// that guards something dangerous, narrow the call to [BrowserForm], or to
	// no fallback, with [WithFallbacks].
	LLMMediated Fallback = engine.FallbackLLM

	// BrowserForm serves the form on 127.0.0.1, on a random port, for a
	// server that runs on the user's own machine: a page with a per-form
	// nonce in its URL, a verification code, one submission, every field
	// kind, validated again on the server. The page and the code are
	// announced as an MCP log message at level notice, and as a progress
	// notification when the call has a progress token; [Config].OpenBrowser,
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
	// page, or [WithLink]'s) the same way, without a code, and the call
	// waits for the user's answer there.
	BrowserForm Fallback = engine.FallbackBrowser
)

// WithFallbacks sets the fallbacks this call may use, in order, instead of
// the Elicitor's. Only fallbacks the Elicitor enables ([Config].Fallbacks)
// are used; WithFallbacks() with none allows none.
func WithFallbacks(f ...Fallback) Option {
	return func(o *options) { o.fallbacks = append([]Fallback{}, f...) }
}

// enabled reports whether the Elicitor enables f.
func (e *Elicitor) enabled(f Fallback) bool { return slices.Contains(e.fallbacks, f) }

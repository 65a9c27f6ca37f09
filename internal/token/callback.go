package token

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
)

// Resolver completes the elicitation a URL-mode callback token names. The
// elicit flow implements it: it records the completion in the store and
// lets the waiting node send notifications/elicitation/complete.
type Resolver interface {
	// ResolveURL is called once per token, after the token was verified,
	// the user checked and the token consumed. An error that matches
	// ErrExpired or ErrReplayed (the elicitation is no longer pending)
	// is answered with 410, any other with 500.
	ResolveURL(ctx context.Context, c *Claims) error
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, c *Claims) error

// ResolveURL calls f.
func (f ResolverFunc) ResolveURL(ctx context.Context, c *Claims) error { return f(ctx, c) }

// DefaultParam is the query parameter CallbackHandler reads the token from.
const DefaultParam = "token"

// CallbackHandler serves URL-mode callbacks: GET or POST with a URL token
// in a query parameter. It verifies the token (kind URL), checks the
// browser's user against the token's subject, consumes the token and hands
// the completion to the Resolver, then answers with a small self-contained
// HTML page: 200 when done, 400 for an invalid token, 403 for another
// user, 410 for an expired or already used one, 405 for another method,
// 500 when the store or the resolver fails. No page carries a claim value
// or the token, and every response forbids framing, caching, referrers and
// every resource but its own inline style.
type CallbackHandler struct {
	// Tokens verifies and consumes the tokens; it needs a store.
	Tokens *Service
	// Resolver completes the elicitation; required.
	Resolver Resolver
	// User returns the subject of the browser's authenticated user, and
	// false when the browser is not signed in. When it is set, a token
	// issued to a subject is accepted only from that user (403 otherwise,
	// before the token is consumed, so the right user can still use it).
	// Leave it nil when the server has no user identity.
	User func(r *http.Request) (subject string, ok bool)
	// Param is the query parameter holding the token; DefaultParam when
	// empty.
	Param string
	// ConfirmFirst makes GET only verify the token and show a page with
	// one button that POSTs it back; only POST consumes it. Set it when the
	// links may be fetched by mail scanners or link previewers, which
	// would otherwise use the token up.
	ConfirmFirst bool
	// OnError, when set, is called for every rejection with the status
	// code and the error (a sentinel of this package, or a wrapped store
	// or resolver error), for logging and metrics.
	OnError func(r *http.Request, status int, err error)
}

// ServeHTTP implements http.Handler.
func (h *CallbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")

	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		hdr.Set("Allow", "GET, POST")
		h.fail(w, r, http.StatusMethodNotAllowed, errors.New("token: callback: method not allowed"))
		return
	}
	param := h.Param
	if param == "" {
		param = DefaultParam
	}
	values := r.URL.Query()[param]
	if len(values) != 1 {
		h.fail(w, r, http.StatusBadRequest, ErrInvalid)
		return
	}
	c, err := h.Tokens.Verify(values[0], Expect{Kind: URL})
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	if h.User != nil && c.Subject != "" {
		if sub, ok := h.User(r); !ok || sub != c.Subject {
			h.fail(w, r, http.StatusForbidden, errWrongUser)
			return
		}
	}
	if h.ConfirmFirst && r.Method == http.MethodGet {
		writePage(w, http.StatusOK, pageConfirm)
		return
	}
	if err := h.Tokens.markUsed(r.Context(), c); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	if err := h.Resolver.ResolveURL(r.Context(), c); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	writePage(w, http.StatusOK, pageDone)
}

var errWrongUser = errors.New("token: callback from another user")

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrExpired), errors.Is(err, ErrReplayed):
		return http.StatusGone
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrUnknownKey):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func (h *CallbackHandler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if h.OnError != nil {
		h.OnError(r, status, err)
	}
	p := pageError
	switch status {
	case http.StatusBadRequest:
		p = pageInvalid
	case http.StatusForbidden:
		p = pageWrongUser
	case http.StatusGone:
		p = pageGone
	case http.StatusMethodNotAllowed:
		p = pageMethod
	}
	writePage(w, status, p)
}

func writePage(w http.ResponseWriter, status int, page string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(status)
	w.Write([]byte(page))
}

// The pages are constants: nothing from the request or the token is ever
// written into them.
const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f7f9;color:#1c2330}main{max-width:28em;padding:2em;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}h1{font-size:1.25em;margin:0 0 .5em}p{margin:0}button{margin-top:1.25em;font:inherit;padding:.5em 1.25em;border:0;border-radius:8px;background:#2456d6;color:#fff;cursor:pointer}`

var (
	pageCSP = "default-src 'none'; style-src 'sha256-" + styleHash() + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

	pageDone      = page("Done", "You can close this window and return to your application.", "")
	pageConfirm   = page("Continue?", "Select Continue to finish in your application.", `<form method="post"><button type="submit">Continue</button></form>`)
	pageInvalid   = page("This link is not valid", "Return to your application and start again.", "")
	pageWrongUser = page("Wrong account", "This link was issued to another account. Sign in as the user who asked for it, then open the link again.", "")
	pageGone      = page("This link has expired", "It was used already or is too old. Return to your application and start again.", "")
	pageMethod    = page("Not allowed", "Open this link in your browser.", "")
	pageError     = page("Something went wrong", "Return to your application and try again.", "")
)

func styleHash() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func page(title, text, extra string) string {
	return `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width,initial-scale=1">` +
		`<meta name="referrer" content="no-referrer"><title>` + title + `</title>` +
		`<style>` + pageStyle + `</style></head><body><main><h1>` + title + `</h1><p>` + text + `</p>` +
		extra + `</main></body></html>`
}

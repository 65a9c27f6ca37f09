package elicit

import (
	"context"
	"errors"
)

// URL asks the user to visit a page of the server (URL mode): to sign in to
// a third party, enter a secret, or consent, without the value ever
// passing through the MCP client. The link goes to the built-in consent
// page under [Config.BaseURL] (see [Elicitor.Handler] and [Elicitor.Pages]),
// or to a page of yours with [WithLink]; when the user is done there, the elicitation completes on
// this node or any other that shares the store, URL sends
// notifications/elicitation/complete and returns the user's choice:
// Accept, or Decline when they refused on the page.
//
// The link carries a callback token: opaque (sealed, 128 bits of ID, no
// PII), single-use, bound to the session and the user, and valid for the
// elicitation's TTL.
//
// Decline and Cancel are also the user's refusal to open the page. The
// waiting, TTL, cancellation and protocol rules are those of [Form]; on
// 2026-07-28 the handler runs again once the user opened the page (see
// Reruns in the package documentation), and URL waits there for the page,
// in retries of at most [Config.URLRoundWait].
// With [WithURLElicitationRequiredError] (before 2026-07-28) URL does not
// wait: it returns an error matching [ErrInputRequired] for the handler to
// return, which becomes the protocol error -32042; when the page completes
// the client is notified, retries the call, and this time URL returns the
// user's choice.
func URL(ctx context.Context, message string, opts ...Option) (Action, error) {
	o := collect(opts)
	e, err := fromContext(ctx)
	if err != nil {
		return "", err
	}
	if o.link == nil {
		if e.baseURL == "" {
			return "", errors.New("elicit: URL needs Config.BaseURL (the address of the consent page) or WithLink")
		}
		o.link = defaultLink(e.baseURL)
	}
	res, err := e.ask(ctx, &Request{Mode: ModeURL, Message: message}, o)
	if err != nil {
		return "", err
	}
	return res.Action, nil
}

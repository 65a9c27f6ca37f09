package elicit

import (
	"context"
	"errors"

	"github.com/elicitvault/elicitvault/internal/token"
)

// EndURL ends the URL-mode elicitation that verified, consumed claims c
// name with action a, whichever node asked: Accept completes it (as the
// consent page does), Decline and Cancel end it with the user's refusal.
// It is for callbacks that are not the Elicitor's own pages, which verify
// and consume a token of their own (an OAuth 2.0 authorization response,
// package elicit/oauth). An elicitation that is no longer pending is
// ErrUnknownElicitation.
func (e *Elicitor) EndURL(ctx context.Context, c *token.Claims, a Action) error {
	if a != Accept && a != Decline && a != Cancel {
		return errors.New("elicit: EndURL needs accept, decline or cancel")
	}
	return e.resolveURL(ctx, c, a)
}

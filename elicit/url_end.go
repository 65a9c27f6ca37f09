package elicit

import (
	"context"

	"github.com/elicitvault/elicitvault/internal/token"
)

// urlEnder is the Elicitor as its engine's engine.URLEnder: it ends
// URL-mode elicitations for callbacks that are not the Elicitor's own
// pages (package elicit/oauth's). Accept completes one, Decline and
// Cancel end it with the user's refusal.
type urlEnder Elicitor

func (u *urlEnder) EndURL(ctx context.Context, c *token.Claims, action string) error {
	return (*Elicitor)(u).resolveURL(ctx, c, Action(action))
}

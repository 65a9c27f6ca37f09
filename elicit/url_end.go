package elicit

import (
	"context"
	"errors"

	"github.com/elicitvault/elicitvault/elicit/internal/urlend"
	"github.com/elicitvault/elicitvault/internal/token"
)

func init() { urlend.End = endURL }

// endURL ends the URL-mode elicitation that verified, consumed claims c
// name, for callbacks that are not the Elicitor's own pages (package
// elicit/oauth): Accept completes it, Decline and Cancel end it with the
// user's refusal.
func endURL(ctx context.Context, elicitor any, c *token.Claims, action string) error {
	e, ok := elicitor.(*Elicitor)
	if !ok || e == nil {
		return errors.New("elicit: endURL needs an *Elicitor")
	}
	a := Action(action)
	if a != Accept && a != Decline && a != Cancel {
		return errors.New("elicit: endURL needs accept, decline or cancel")
	}
	return e.resolveURL(ctx, c, a)
}

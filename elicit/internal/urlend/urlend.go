// Package urlend lets packages of this module that serve callbacks of
// their own (elicit/oauth) end a URL-mode elicitation from claims they
// verified and consumed, without that door being part of elicit's public
// API: package elicit sets End when it is initialised.
package urlend

import (
	"context"

	"github.com/elicitvault/elicitvault/internal/token"
)

// End ends the URL-mode elicitation that verified, consumed claims c name,
// with action ("accept", "decline" or "cancel"), whichever node asked.
// elicitor is the *elicit.Elicitor. An elicitation that is no longer
// pending is elicit.ErrUnknownElicitation.
var End func(ctx context.Context, elicitor any, c *token.Claims, action string) error

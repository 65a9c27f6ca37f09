package elicit

import (
	"context"
	"errors"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
)

// EndURL ends the URL-mode elicitation that verified, consumed claims c
// name with action a, whichever node asked: Accept completes it (as
// ResolveURL does), Decline and Cancel end it with the user's refusal.
// It is for callbacks that are not the Elicitor's own (an OAuth 2.0
// authorization response, package elicit/oauth). An elicitation that is
// no longer pending is ErrUnknownElicitation.
func (e *Elicitor) EndURL(ctx context.Context, c *token.Claims, a Action) error {
	if a != Accept && a != Decline && a != Cancel {
		return errors.New("elicit: EndURL needs accept, decline or cancel")
	}
	s := e.slot(c.Subject, c.SessionID, c.ElicitationID, time.Time{})
	var rec pendingRecord
	if err := s.get(ctx, purposePending, &rec); err != nil {
		if errors.Is(err, ErrUnknownElicitation) {
			return errGone
		}
		return err
	}
	if rec.Mode != ModeURL {
		return errGone
	}
	s.expiry = time.UnixMilli(rec.Expiry)
	if !s.expiry.After(e.now()) {
		return errGone
	}
	return s.resolve(ctx, &resultRecord{Action: a})
}

package elicit

import (
	"context"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/token"
)

// ResolveURL lets the tests complete a URL-mode elicitation with claims of
// their own making, as a page would after verifying a token.
var ResolveURL = (*Elicitor).resolveURL

// IssueURLToken issues a URL-mode token for subject, for an elicitation
// that has a pending record (the consent page shows it) and nothing
// waiting for its answer.
func IssueURLToken(e *Elicitor, subject string) (string, error) {
	c := &token.Claims{Kind: token.URL, Subject: subject, SessionID: "l:x", ElicitationID: "x"}
	expiry := e.engine.Now().Add(time.Minute)
	s := e.engine.Slot(engine.ClaimsIdentity(c), c.ElicitationID, expiry)
	if err := s.Put(context.Background(), engine.PurposePending, &pendingRecord{Mode: ModeURL, Expiry: expiry.UnixMilli(), Message: "Connect your account"}); err != nil {
		return "", err
	}
	return e.tokens.Issue(c, time.Minute, token.Compact)
}

// ClaimLease is the lease of answer claims.
const ClaimLease = claimLease

// WithDeadlines is Handler's per-request deadlines around any handler.
var WithDeadlines = withDeadlines

// SetTakenWait sets how long e's consent page waits for the call to take
// an answer (2 s otherwise), for tests that answer where nothing takes it.
func SetTakenWait(e *Elicitor, d time.Duration) { e.takenWait = d }

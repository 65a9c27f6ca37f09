package elicit

import (
	"context"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
)

// ResolveURL lets the tests complete a URL-mode elicitation with claims of
// their own making, as a page would after verifying a token.
func ResolveURL(e *Elicitor, ctx context.Context, c *token.Claims, action Action) error {
	_, _, err := e.engine.ResolveURL(ctx, c, string(action))
	return err
}

// IssueURLToken issues a URL-mode token for subject, for an elicitation
// that does not exist.
func IssueURLToken(e *Elicitor, subject string) (string, error) {
	return e.tokens.Issue(&token.Claims{Kind: token.URL, Subject: subject, SessionID: "l:x", ElicitationID: "x"}, time.Minute, token.Compact)
}

// ClaimLease is the lease of answer claims.
const ClaimLease = DefaultClaimLease

// WithDeadlines is Handler's per-request deadlines around any handler.
var WithDeadlines = withDeadlines

// SetTakenWait sets how long e's consent page waits for the call to take
// an answer (2 s otherwise), for tests that answer where nothing takes it.
func SetTakenWait(e *Elicitor, d time.Duration) { e.takenWait = d }

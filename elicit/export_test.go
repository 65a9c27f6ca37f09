package elicit

import (
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
)

// ResolveURL lets the tests complete a URL-mode elicitation with claims of
// their own making, as a page would after verifying a token.
var ResolveURL = (*Elicitor).resolveURL

// IssueURLToken issues a URL-mode token for subject, for an elicitation
// that does not exist.
func IssueURLToken(e *Elicitor, subject string) (string, error) {
	return e.tokens.Issue(&token.Claims{Kind: token.URL, Subject: subject, SessionID: "l:x", ElicitationID: "x"}, time.Minute, token.Compact)
}

// ClaimLease is the lease of answer claims.
const ClaimLease = claimLease

// WithDeadlines is Handler's per-request deadlines around any handler.
var WithDeadlines = withDeadlines

// SetTakenWait sets how long e's consent page waits for the call to take
// an answer (2 s otherwise), for tests that answer where nothing takes it.
func SetTakenWait(e *Elicitor, d time.Duration) { e.takenWait = d }

package elicit

import (
	"context"
	"net/http"
	"time"

	"github.com/elicitvault/elicitvault/internal/clientid"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/form"
	"github.com/elicitvault/elicitvault/internal/token"
)

// ResolveURL lets the tests complete a URL-mode elicitation with claims of
// their own making, as a page would after verifying a token.
func ResolveURL(e *Elicitor, ctx context.Context, c *token.Claims, action Action) error {
	_, _, err := e.engine.ResolveURL(ctx, c, string(action))
	return err
}

// IssueURLToken issues a URL-mode token for subject, for an elicitation
// that has a pending record (the consent page shows it) and nothing
// waiting for its answer.
func IssueURLToken(e *Elicitor, subject string) (string, error) {
	c := &token.Claims{Kind: token.URL, Subject: subject, SessionID: "l:x", ElicitationID: "x"}
	expiry := e.engine.Now().Add(time.Minute)
	s := e.engine.Slot(engine.ClaimsIdentity(c), c.ElicitationID, expiry)
	// The pending record as the engine writes it (its JSON keys).
	rec := map[string]any{"mode": engine.ModeURL, "exp": expiry.UnixMilli(), "msg": "Connect your account"}
	if err := s.Put(context.Background(), engine.PurposePending, rec); err != nil {
		return "", err
	}
	return e.tokens.Issue(c, time.Minute, token.Compact)
}

// ClaimLease is the lease of answer claims.
const ClaimLease = token.DefaultClaimLease

// WithDeadlines is Handler's per-request deadlines around any handler.
var WithDeadlines = withDeadlines

// SetTakenWait sets how long e's consent page waits for the call to take
// an answer (2 s otherwise), for tests that answer where nothing takes it.
func SetTakenWait(e *Elicitor, d time.Duration) { e.takenWait = d }

// Names the package keeps unexported, for its external tests.
var (
	CallbackURL         = callbackURL
	CheckInputResponses = checkHTTPInputResponses
	ForwardedFor        = clientid.ForwardedFor
	WithClientID        = engine.WithClientID
	WithInputKey        = withInputKey

	ErrAnswerInProgress  = engine.ErrAnswerInProgress
	ErrAnswered          = engine.ErrAnswered
	ErrMalformed         = engine.ErrMalformed
	ErrSecretUnavailable = engine.ErrSecretUnavailable
	ErrSessionEvicted    = errSessionEvicted
	ErrSensitiveField    = form.ErrSensitiveField
	ErrInvalidParams     = form.ErrInvalidSchema

	// Of the package's own tests (package elicit).
	errInvalidSchema  = form.ErrInvalidSchema
	errSensitiveField = form.ErrSensitiveField
)

const (
	ConsentPath                      = consentPath
	DefaultMaxPendingBytesPerSubject = defaultMaxPendingBytesPerSubject
	DefaultMaxPendingPerSubject      = defaultMaxPendingPerSubject
	DefaultMaxSessionsPerClient      = defaultMaxSessionsPerClient
	FallbackTool                     = engine.FallbackTool
	MaxCarried                       = maxCarried
	MetaElicitationPending           = engine.MetaElicitationPending
	MetaElicitationReplayed          = engine.MetaElicitationReplayed
	ProtocolInputRequests            = engine.ProtocolInputRequests
	TasksExtension                   = engine.TasksExtension
)

type UnsupportedError = unsupportedError

// EndSessionOnDelete is the DELETE handling Handler composes.
func (e *Elicitor) EndSessionOnDelete(h http.Handler) http.Handler { return e.endSessionOnDelete(h) }

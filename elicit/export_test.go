package elicit

import (
	"net/http"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/form"
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

// Names the package keeps unexported, for its external tests.
var (
	CallbackURL         = callbackURL
	CheckInputResponses = checkHTTPInputResponses
	ForwardedFor        = forwardedFor
	WithClientID        = contextWithClientID
	WithInputKey        = withInputKey

	ErrAnswerInProgress  = errAnswerInProgress
	ErrAnswered          = errAnswered
	ErrMalformed         = errMalformed
	ErrSecretUnavailable = errSecretUnavailable
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
	MetaElicitationPending           = metaElicitationPending
	MetaElicitationReplayed          = metaElicitationReplayed
	ProtocolInputRequests            = protocolInputRequests
	TasksExtension                   = tasksExtension
)

type UnsupportedError = unsupportedError

// EndSessionOnDelete is the DELETE handling Handler composes.
func (e *Elicitor) EndSessionOnDelete(h http.Handler) http.Handler { return e.endSessionOnDelete(h) }

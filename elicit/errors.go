package elicit

import (
	"errors"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/form"
)

var (
	// ErrInvalidParams is matched by every *SchemaError: the form asked for
	// is outside the MCP elicitation subset. It is a bug at the call site,
	// reported before anything is sent.
	ErrInvalidParams = form.ErrInvalidSchema

	// ErrSensitiveField is matched by a *SchemaError for a form field whose
	// name says it holds a secret. Ask for such values with URL, or opt out
	// with AllowSensitiveFieldsInFormMode.
	ErrSensitiveField = form.ErrSensitiveField

	// ErrInvalidContent is matched by every *ContentError: the client
	// accepted with content that does not match the schema.
	ErrInvalidContent = form.ErrInvalidContent
)

var (
	// ErrNotInstalled is returned when Form, Confirm or URL is called with a
	// context that carries no Elicitor: install one with Elicitor.Install.
	ErrNotInstalled = engine.ErrNotInstalled

	// ErrNoSession is returned for a request without a session or params.
	ErrNoSession = errors.New("elicit: request has no session")

	// ErrUnsupported is matched by every *UnsupportedError: the client
	// cannot receive the elicitation in the mode it needs, and nothing was
	// sent. A tool can branch on it.
	ErrUnsupported = errors.New("elicit: client does not support this elicitation mode")

	// ErrTimeout is returned when no answer arrived within the TTL. The
	// request to the client is cancelled.
	ErrTimeout = engine.ErrTimeout

	// ErrClientCancelled is returned when the client cancelled the tool
	// call while it waited for the user, most often because the client's
	// request timeout ran out (see Config.ProgressInterval). It matches
	// context.Canceled.
	ErrClientCancelled = engine.ErrClientCancelled

	// ErrClosed is returned to the handler of a call whose elicitation was
	// waiting when the Elicitor was closed (the server is shutting down),
	// and to calls that arrive after Close.
	ErrClosed = engine.ErrClosed

	// ErrCancelled is returned to the waiter of an elicitation that a newer
	// elicitation in the same session replaced: a session has at most one
	// pending elicitation.
	ErrCancelled = engine.ErrCancelled

	// ErrSessionEnded is returned to the handler of a call whose session
	// ended (HTTP DELETE, idle timeout) while it waited for an answer.
	ErrSessionEnded = engine.ErrSessionEnded

	// ErrTooManyPending is returned when an elicitation would exceed
	// Config.MaxPending or Config.MaxPendingPerSubject: nothing was sent
	// or written.
	ErrTooManyPending = engine.ErrTooManyPending

	// ErrSecretUnavailable is returned for an answer that this node cannot
	// use up safely: the secret the elicitation was asked under, which
	// keys its one-shot marker, is not in this node's keyring (removed
	// too early after a rotation). Nothing was consumed; the answer may be
	// sent again to a node that holds the secret.
	ErrSecretUnavailable = engine.ErrSecretUnavailable

	// ErrTooLarge is returned for an answer whose content is larger than
	// the configured limit. It also matches ErrInvalidContent.
	ErrTooLarge = engine.ErrTooLarge

	// ErrMalformed is returned for an answer that is not one: an unknown
	// action, or content that is not a JSON object.
	ErrMalformed = engine.ErrMalformed

	// ErrUnknownElicitation is returned for an answer to an elicitation that
	// does not exist (any more), or that belongs to another session or
	// subject. It is deliberately one error.
	ErrUnknownElicitation = engine.ErrUnknownElicitation

	// ErrInputRequired is matched by the error Form, Confirm and URL return
	// on protocol 2026-07-28 when the answer is not in the request yet. The
	// handler must return it (or an error wrapping it): the installed
	// middleware then replaces the tool result with input requests, and the
	// handler runs again when the client calls with the answers.
	ErrInputRequired = engine.ErrInputRequired
)

// UnsupportedError reports the mode the client lacks.
type UnsupportedError struct {
	Mode Mode
}

func (e *UnsupportedError) Error() string {
	if e.Mode == ModeURL {
		return "elicit: this MCP client cannot open a page of the server for the user (it does not support URL-mode elicitation); " +
			"the user needs a client that does, or the server can enable a fallback (LLM-mediated, which hands the link to the model, or browser, which announces it to the user)"
	}
	return "elicit: this MCP client cannot ask the user (it does not support " + string(e.Mode) + "-mode elicitation); " +
		"the user needs a client that does, or the server can enable a fallback (LLM-mediated or browser form)"
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// ClientError reports that the client answered an elicitation with a
// JSON-RPC error. Only the code is kept: the message may quote the user's
// answer.
type ClientError = engine.ClientError

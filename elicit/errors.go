package elicit

import (
	"errors"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/form"
)

// ErrInvalidContent is matched by every [*ContentError]: the client
// accepted with content that does not match the schema, or sent an answer
// that is not one (an unknown action, content that is not a JSON object).
// Nothing of it reached the tool.
var ErrInvalidContent = form.ErrInvalidContent

var (
	// ErrNotInstalled is returned when Form, Confirm, URL or SaveState is
	// called with a context that carries no Elicitor: call them with the
	// context of a tool handler of a server the Elicitor is installed on
	// ([Elicitor.Install]).
	ErrNotInstalled = engine.ErrNotInstalled

	// ErrUnsupported is returned when the client cannot receive the
	// elicitation in the mode it needs and none of the Elicitor's
	// fallbacks applies ([Config.Fallbacks]): nothing was sent. A tool can
	// branch on it, to explain what the user needs.
	ErrUnsupported = errors.New("elicit: client does not support this elicitation mode")

	// ErrTimeout is returned when no answer arrived within the TTL
	// ([Config.TTL], [WithTTL]). The request to the client is cancelled.
	ErrTimeout = engine.ErrTimeout

	// ErrClosed is returned to the handler of a call whose elicitation was
	// waiting when the Elicitor was closed ([Elicitor.Close]: the server is
	// shutting down), and to calls that arrive after Close.
	ErrClosed = engine.ErrClosed

	// ErrReplaced is returned to the waiter of an elicitation that a newer
	// elicitation in the same session replaced: a session has at most one
	// pending elicitation.
	ErrReplaced = engine.ErrCancelled

	// ErrSessionEnded is returned to the handler of a call whose session
	// ended (HTTP DELETE, idle timeout, or closed to make room for newer
	// sessions: [HandlerOptions.MaxSessions]) while it waited for an answer.
	ErrSessionEnded = engine.ErrSessionEnded

	// ErrTooManyPending is returned when an elicitation would exceed
	// [Config.MaxPending] or [Config.MaxPendingPerSubject]: nothing was
	// sent or written. The call may be tried again later.
	ErrTooManyPending = engine.ErrTooManyPending

	// ErrTooLarge is returned for an answer whose content is larger than
	// [Config.MaxContentSize] (it also matches [ErrInvalidContent]), and by
	// [SaveState] for a state over 4 KiB.
	ErrTooLarge = engine.ErrTooLarge

	// ErrUnknownElicitation is returned for an answer to an elicitation that
	// does not exist (any more), or that belongs to another session or
	// subject, and by [Elicitor.CompleteURL] for a link already used or
	// expired. It is deliberately one error.
	ErrUnknownElicitation = engine.ErrUnknownElicitation

	// ErrInputRequired is matched by the error Form, Confirm and URL return
	// when the answer is not in the request yet: on protocol 2026-07-28,
	// with the LLMMediated fallback, and with
	// [WithURLElicitationRequiredError]. The handler must return it (or an
	// error wrapping it): the installed middleware then answers the call
	// with input requests (or the error -32042), and the handler runs
	// again when the client calls with the answers.
	ErrInputRequired = engine.ErrInputRequired
)

// Errors kept inside the package: what a caller could do about them, it
// does for every error (return it).
var (
	// errNoSession is returned for a request without a session or params.
	errNoSession = errors.New("elicit: request has no session")

	// errMalformed is returned for an answer that is not one: an unknown
	// action, or content that is not a JSON object. It matches
	// ErrInvalidContent.
	errMalformed = engine.ErrMalformed
)

// unsupportedError reports the mode the client lacks. It matches
// ErrUnsupported.
type unsupportedError struct {
	Mode Mode
}

func (e *unsupportedError) Error() string {
	if e.Mode == ModeURL {
		return "elicit: this MCP client cannot open a page of the server for the user (it does not support URL-mode elicitation); " +
			"the user needs a client that does, or the server can enable a fallback (LLM-mediated, which hands the link to the model, or browser, which announces it to the user)"
	}
	return "elicit: this MCP client cannot ask the user (it does not support " + string(e.Mode) + "-mode elicitation); " +
		"the user needs a client that does, or the server can enable a fallback (LLM-mediated or browser form)"
}

func (e *unsupportedError) Unwrap() error { return ErrUnsupported }

package elicit

import (
	"context"
	"slices"
	"time"
)

// Result is the outcome of a form elicitation. Content is set only when
// Action is Accept, and has then been validated against the schema.
type Result[T any] struct {
	Action  Action
	Content T
}

// Option configures one elicitation.
type Option func(*options)

type options struct {
	ttl            time.Duration
	schema         *Schema
	allowSensitive bool
	requiredError  bool
	link           func(token string) string // URL mode
	fallbacks      []Fallback                // nil: the Elicitor's
	key            string                    // of the input request, 2026-07-28
}

// WithTTL sets how long this elicitation waits for its answer, instead of
// the Elicitor's TTL ([Config.TTL]).
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithSchema makes [Form] ask with s instead of the schema derived from T:
// one made by [SchemaFor] (T's, refined with titles, formats, bounds,
// choices, defaults) or by [ParseSchema] (written as JSON). T must decode
// every answer s accepts (map[string]any always does). Make s once, at
// start-up: a Schema is immutable and safe for concurrent use.
func WithSchema(s *Schema) Option { return func(o *options) { o.schema = s } }

// AllowSensitiveFieldsInFormMode lets a form ask for fields whose names say
// they hold secrets (passwords, API keys, tokens, card numbers). In form
// mode the value passes through the MCP client, its logs and possibly the
// model's context: prefer URL mode, where the user enters it on the
// server's own page.
func AllowSensitiveFieldsInFormMode() Option {
	return func(o *options) { o.allowSensitive = true }
}

// WithURLElicitationRequiredError makes [URL], instead of sending the
// elicitation and waiting, fail the tool call with the protocol error
// -32042 (URL elicitation required) that carries it. The client opens the
// URL and retries the call once notifications/elicitation/complete
// arrives. The handler must return the error unchanged: it matches
// [ErrInputRequired].
func WithURLElicitationRequiredError() Option {
	return func(o *options) { o.requiredError = true }
}

// withInputKey sets the key of the elicitation's input request on protocol
// 2026-07-28, in the result's inputRequests and the client's
// inputResponses, for the conformance fixtures, which expect given ones
// (elicitlink.InputKey). By default the key is derived from the
// elicitation's random ID. The answer is taken only with the requestState
// the result carries, whatever the key.
func withInputKey(key string) Option { return func(o *options) { o.key = key } }

func collect(opts []Option) *options {
	o := &options{}
	for _, f := range opts {
		f(o)
	}
	return o
}

// Form asks the user to fill in a form whose schema is derived from T, a
// struct (see [SchemaFor]; [WithSchema] gives another), and returns the
// answer decoded into a T.
//
// The schema is checked against the MCP elicitation subset before anything
// is sent (a [*SchemaError] names the field); a field whose name says it
// holds a secret is refused unless [AllowSensitiveFieldsInFormMode] is
// given (SchemaError.Sensitive). An accepted answer is validated against
// the schema it was asked with (a [*ContentError], matching
// [ErrInvalidContent], names the JSON path) before it is decoded.
//
// On protocol 2025-06-18 and 2025-11-25 Form sends elicitation/create and
// waits, at most the TTL ([ErrTimeout]). A newer elicitation in the same
// session replaces this one ([ErrReplaced]). A client without form mode is
// never sent one: the Elicitor's fallbacks are tried (see [Fallback]),
// and without one that applies Form returns an error matching
// [ErrUnsupported]. The
// LLMMediated fallback, like 2026-07-28, returns an error matching
// ErrInputRequired for the handler to return, and runs the handler again
// with the answer.
//
// On protocol 2026-07-28 a server must not send requests during a call.
// There [Form] returns an error matching [ErrInputRequired], which the handler
// returns; the client answers and calls the tool again, and the handler
// runs again from the start: this time Form returns the answer. Work done
// before Form therefore runs again: see Reruns in the package
// documentation.
// Several elicitations in one handler are answered one round each, in
// order, and each must be asked again, identically, on every run.
func Form[T any](ctx context.Context, message string, opts ...Option) (Result[T], error) {
	var zero Result[T]
	o := collect(opts)
	s := o.schema
	if s == nil {
		var err error
		if s, err = SchemaFor[T](); err != nil {
			return zero, err
		}
	}
	if err := s.checkFormMode(o.allowSensitive); err != nil {
		return zero, err
	}
	e, err := fromContext(ctx)
	if err != nil {
		return zero, err
	}
	res, err := e.ask(ctx, &Request{Mode: ModeForm, Message: message, Schema: s}, o)
	if err != nil {
		return zero, err
	}
	out := Result[T]{Action: res.Action}
	if res.Action == Accept {
		if out.Content, err = decodeInto[T](res.Content); err != nil {
			return zero, err
		}
	}
	return out, nil
}

// confirmSchema is the one-field form [Confirm] asks with.
var confirmSchema = mustSchema(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","default":false}},"required":["confirm"]}`)

func mustSchema(raw string) *Schema {
	s, err := ParseSchema([]byte(raw))
	if err != nil {
		panic(err)
	}
	return s
}

// Confirm asks the user a yes/no question. It returns true only when the
// user explicitly accepted with the confirmation set; decline, cancel, a
// timeout and a client that cannot elicit all return false (the error says
// which, for the last two). It asks as [Form] does, and like [Form] the
// handler may run again before Confirm returns: see Reruns in the package
// documentation.
func Confirm(ctx context.Context, message string, opts ...Option) (bool, error) {
	type confirmation struct {
		Confirm bool `json:"confirm"`
	}
	res, err := Form[confirmation](ctx, message, append(slices.Clip(opts), func(o *options) { o.schema = confirmSchema })...)
	if err != nil {
		return false, err
	}
	return res.Action == Accept && res.Content.Confirm, nil
}

package elicit

import "context"

// Mode is an elicitation mode.
type Mode string

// The elicitation modes.
const (
	ModeForm Mode = "form"
	ModeURL  Mode = "url"
)

// Action is the user's answer to an elicitation.
type Action string

// The actions. Only Accept carries content.
const (
	Accept  Action = "accept"
	Decline Action = "decline"
	Cancel  Action = "cancel"
)

// Request is an elicitation as hooks see it. It carries neither the session
// ID nor the subject, and not the URL of a URL-mode elicitation (which
// holds a bearer callback token).
type Request struct {
	// ID is the elicitation ID (random, 128 bits).
	ID string
	// Mode is ModeForm or ModeURL.
	Mode Mode
	// Message is shown to the user. A BeforeRequest hook may rewrite it
	// (to redact, say) before it is sent.
	Message string
	// Schema is the form's schema (ModeForm only).
	Schema *Schema
	// Call is the tool call the elicitation belongs to.
	Call *Call
}

// Response is an answer. In the request flow its Content is as the client
// sent it; in the result flow, once validated, it is normalized (numbers
// as float64, multi-selections as []string, defaults filled in).
type Response struct {
	Action  Action
	Content map[string]any

	// handed marks an answer that reached the waiting call without the
	// store, which had lost its records (waiters): nothing else of it is
	// stored.
	handed bool
}

// RequestFunc is the request flow: it delivers r to the user and returns
// the raw answer. On 2026-07-28 it runs in every round of the call; in the
// round that asks, it returns an error matching ErrInputRequired.
type RequestFunc func(ctx context.Context, r *Request) (*Response, error)

// ResultFunc is the result flow: it checks a raw answer (size, action,
// schema) and returns it validated, for the tool.
type ResultFunc func(ctx context.Context, r *Request, raw *Response) (*Response, error)

// Hooks observe and wrap the two flows of every elicitation, for audit,
// redaction and metrics. Any field may be nil. Before hooks may modify
// what they are given and abort with an error; After hooks observe the
// outcome; Around hooks wrap the flow and must call next (or not, to
// short-circuit it).
//
// Hooks receive content in the clear: a hook that logs must redact.
type Hooks struct {
	BeforeRequest func(ctx context.Context, r *Request) error
	AroundRequest func(ctx context.Context, r *Request, next RequestFunc) (*Response, error)
	AfterRequest  func(ctx context.Context, r *Request, raw *Response, err error)

	BeforeResult func(ctx context.Context, r *Request, raw *Response) error
	AroundResult func(ctx context.Context, r *Request, raw *Response, next ResultFunc) (*Response, error)
	AfterResult  func(ctx context.Context, r *Request, res *Response, err error)

	// Carry and Resume take a context, such as a trace's, across nodes:
	// the answer of an elicitation may reach another node than the one
	// that asked (a URL-mode page, a 2026-07-28 round). Carry is called
	// with the request flow's context when the elicitation's pending
	// record is written; what it returns is sealed in that record, with
	// it, and never appears in a URL or token. Keys and values count
	// against a limit of 1 KiB for all hooks together; a hook
	// over it carries nothing. Resume is called on the node that resumes
	// the elicitation from its record (a page that resolves it, a round
	// that awaits it) with every hook's carried entries; it returns the
	// context of that work and a function called with its outcome.
	Carry  func(ctx context.Context) map[string]string
	Resume func(ctx context.Context, m Mode, carried map[string]string) (context.Context, func(err error))

	// StoreReset is called when this node finds that the store lost its
	// data (its epoch changed: a restart without persistence, a flush):
	// from then on, state issued before is refused (SECURITY.md, "A store
	// that forgets").
	StoreReset func(ctx context.Context)
}

// maxCarried is the most, in bytes of keys and values, that Carry hooks
// put in a pending record.
const maxCarried = 1024

// carry collects what the hooks carry in a pending record.
func carry(ctx context.Context, hooks []Hooks) map[string]string {
	var out map[string]string
	n := 0
	for _, h := range hooks {
		if h.Carry == nil {
			continue
		}
		m := h.Carry(ctx)
		size := 0
		for k, v := range m {
			size += len(k) + len(v)
		}
		if n+size > maxCarried {
			continue
		}
		n += size
		for k, v := range m {
			if out == nil {
				out = make(map[string]string, len(m))
			}
			out[k] = v
		}
	}
	return out
}

// resume runs the hooks' Resume, hooks[0] outermost, and returns the
// resumed context and the function that ends it.
func resume(ctx context.Context, hooks []Hooks, m Mode, carried map[string]string) (context.Context, func(error)) {
	var ends []func(error)
	for _, h := range hooks {
		if h.Resume == nil {
			continue
		}
		var end func(error)
		ctx, end = h.Resume(ctx, m, carried)
		if end != nil {
			ends = append(ends, end)
		}
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

// wrapRequest wraps the request flow in hooks, hooks[0] outermost.
func wrapRequest(hooks []Hooks, f RequestFunc) RequestFunc {
	for i := len(hooks) - 1; i >= 0; i-- {
		h, next := hooks[i], f
		if h.BeforeRequest == nil && h.AroundRequest == nil && h.AfterRequest == nil {
			continue
		}
		f = func(ctx context.Context, r *Request) (*Response, error) {
			if h.BeforeRequest != nil {
				if err := h.BeforeRequest(ctx, r); err != nil {
					if h.AfterRequest != nil {
						h.AfterRequest(ctx, r, nil, err)
					}
					return nil, err
				}
			}
			var (
				res *Response
				err error
			)
			if h.AroundRequest != nil {
				res, err = h.AroundRequest(ctx, r, next)
			} else {
				res, err = next(ctx, r)
			}
			if h.AfterRequest != nil {
				h.AfterRequest(ctx, r, res, err)
			}
			return res, err
		}
	}
	return f
}

// wrapResult wraps the result flow in hooks, hooks[0] outermost.
func wrapResult(hooks []Hooks, f ResultFunc) ResultFunc {
	for i := len(hooks) - 1; i >= 0; i-- {
		h, next := hooks[i], f
		if h.BeforeResult == nil && h.AroundResult == nil && h.AfterResult == nil {
			continue
		}
		f = func(ctx context.Context, r *Request, raw *Response) (*Response, error) {
			if h.BeforeResult != nil {
				if err := h.BeforeResult(ctx, r, raw); err != nil {
					if h.AfterResult != nil {
						h.AfterResult(ctx, r, nil, err)
					}
					return nil, err
				}
			}
			var (
				res *Response
				err error
			)
			if h.AroundResult != nil {
				res, err = h.AroundResult(ctx, r, raw, next)
			} else {
				res, err = next(ctx, r, raw)
			}
			if h.AfterResult != nil {
				h.AfterResult(ctx, r, res, err)
			}
			return res, err
		}
	}
	return f
}

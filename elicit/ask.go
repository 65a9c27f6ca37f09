package elicit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// ask runs one elicitation: the request flow (the hooks, around the
// engine's delivery) to get a raw answer, then the result flow to
// validate it.
func (e *Elicitor) ask(ctx context.Context, r *Request, o *options) (*Response, error) {
	call, err := callFrom(ctx)
	if err != nil {
		return nil, err
	}
	r.Call = call
	r.ID = engine.RandomID()
	ttl := o.ttl
	if ttl <= 0 {
		ttl = e.ttl
	}
	send := func(ctx context.Context, r *Request) (*Response, error) {
		// After the hooks of the request flow, which see the request
		// first. The engine replays an earlier run's answer (under its
		// ID), or chooses the path, once.
		q := e.engineAsk(ctx, r, ttl, o)
		res, err := e.engine.Deliver(ctx, q)
		r.ID = q.ID
		return fromEngine(res), err
	}
	stop := e.engine.ReportProgress(ctx, call.peer)
	raw, err := wrapRequest(e.hooks, send)(ctx, r)
	stop()
	if err != nil {
		return nil, err
	}
	return wrapResult(e.hooks, e.check)(ctx, r, raw)
}

// engineAsk is the elicitation r as the engine delivers it.
func (e *Elicitor) engineAsk(ctx context.Context, r *Request, ttl time.Duration, o *options) *engine.Ask {
	q := &engine.Ask{
		ID: r.ID, Mode: string(r.Mode), Message: r.Message,
		TTL: ttl, Key: o.key, Link: o.link, RequiredError: o.requiredError,
	}
	if r.Schema != nil {
		q.Schema = r.Schema.raw
	}
	if o.fallbacks != nil {
		q.Fallbacks = make([]string, len(o.fallbacks))
		for i, f := range o.fallbacks {
			q.Fallbacks[i] = string(f)
		}
	}
	if run := engine.TaskRunFrom(ctx); run != nil {
		q.Task = func(ctx context.Context) (*engine.Response, error) { return run.Ask(ctx, q) }
	}
	q.Unsupported = func(context.Context) (*engine.Response, error) {
		return nil, &unsupportedError{Mode: r.Mode}
	}
	return q
}

// fromEngine is an answer the engine delivered, as the flow's Response.
func fromEngine(r *engine.Response) *Response {
	if r == nil {
		return nil
	}
	return &Response{Action: Action(r.Action), Content: r.Content, handed: r.Handed}
}

// check is the core of the result flow: the action is known, content comes
// only with accept, is within the size limit and matches the schema.
func (e *Elicitor) check(_ context.Context, r *Request, raw *Response) (*Response, error) {
	if raw == nil {
		return nil, errMalformed
	}
	switch raw.Action {
	case Decline, Cancel:
		// Content that comes with a refusal is dropped unread.
		return &Response{Action: raw.Action}, nil
	case Accept:
	default:
		return nil, errMalformed
	}
	if r.Mode == ModeURL {
		// URL mode carries no content: the answer went to the server's page.
		return &Response{Action: Accept}, nil
	}
	if err := checkSize(raw.Content, e.maxSize); err != nil {
		return nil, err
	}
	content, err := r.Schema.Validate(raw.Content)
	if err != nil {
		return nil, err
	}
	return &Response{Action: Accept, Content: content}, nil
}

// checkSize bounds accepted content at maxSize bytes of JSON.
func checkSize(content map[string]any, maxSize int) error {
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("%w: content does not encode", errMalformed)
	}
	if len(b) > maxSize {
		return ErrTooLarge
	}
	return nil
}

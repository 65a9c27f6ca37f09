package elicit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// ask runs one elicitation: the request flow (through the hooks) to get a
// raw answer, then the result flow to validate it.
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

	rd, _ := ctx.Value(roundKey{}).(*round)
	supported := (r.Mode == ModeForm && call.FormMode) || (r.Mode == ModeURL && call.URLMode)
	inputRequests := call.inputRequests()
	if rd != nil && rd.continued && inputRequests {
		// The continuation of an LLM-mediated elicitation answers a tool
		// call of its own: it cannot stop for input requests.
		supported = false
	}

	run := taskFrom(ctx)
	var send RequestFunc = func(ctx context.Context, r *Request) (*Response, error) {
		// After the hooks of the request flow, which see the request first.
		return e.choose(rd, run, r, supported, o).deliver(ctx, rd, r, ttl, o)
	}
	if rd != nil {
		send = rd.replay(e, ttl, send)
	}
	stop := e.reportProgress(ctx, call)
	raw, err := wrapRequest(e.hooks, send)(ctx, r)
	stop()
	if err != nil {
		return nil, err
	}
	return wrapResult(e.hooks, e.check)(ctx, r, raw)
}

// path is one way an elicitation reaches the user: the blocking request
// (blockingPath), input requests (inputPath), a task's input (taskPath),
// -32042 (urlRequiredPath), the fallbacks (modelPath, browserPath) and the
// unsupported (policyPath). Each has its file and its state; choose picks one
// per elicitation.
type path interface {
	deliver(ctx context.Context, rd *round, r *Request, ttl time.Duration, o *options) (*Response, error)
}

// choose returns the path of the elicitation r: the client's own, when it
// can receive it (supported); otherwise the first fallback that applies,
// else an *unsupportedError (policyPath). run is the task the call runs as, or nil.
func (e *Elicitor) choose(rd *round, run *taskRun, r *Request, supported bool, o *options) path {
	inputRequests := r.Call.inputRequests()
	switch {
	case supported && run != nil:
		return e.task
	case supported && r.Mode == ModeURL && o.requiredError && !inputRequests:
		return e.urlReq
	case supported && inputRequests:
		return e.input
	case supported:
		return e.block
	}
	order := e.fallbacks
	if o.fallbacks != nil {
		order = o.fallbacks
	}
	for _, f := range order {
		switch {
		case !e.enabled(f):
		case f == LLMMediated && rd != nil:
			return e.model
		case f == BrowserForm && e.browse.canAnnounce(r.Call):
			return e.browse
		}
	}
	return policyPath{e}
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

// fromReply converts a client's reply. Content that is not a JSON object
// is malformed.
func fromReply(rp *engine.Reply) (*Response, error) {
	res := &Response{Action: Action(rp.Action)}
	if len(rp.Content) > 0 {
		if err := json.Unmarshal(rp.Content, &res.Content); err != nil {
			return nil, fmt.Errorf("%w: content is not a JSON object", errMalformed)
		}
	}
	return res, nil
}

// reportProgress sends a progress notification every ProgressInterval
// while an elicitation waits, when the call carries a progress token: a
// client that resets its request timeout on progress then keeps waiting
// while the user reads the question. The returned func stops it.
func (e *Elicitor) reportProgress(ctx context.Context, c *Call) (stop func()) {
	if c.info.ProgressToken == nil || e.progressEvery <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.progressEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.peer.Progress(ctx, float64(n), "waiting for the user's answer")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

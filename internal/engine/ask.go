package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/elicitvault/elicitvault/internal/form"
)

// This file is one elicitation as the engine delivers it (Ask, Deliver),
// and the choice of its delivery path, made once per elicitation: the
// blocking request (blocking.go), input requests (input.go), a task's
// input (the front-end's, Ask.Task), -32042 (urlrequired.go), the
// fallbacks (model.go, browser.go) and the policy (Ask.Unsupported).

// The elicitation modes and the actions of an answer, as the wire spells
// them. Only Accept carries content.
const (
	ModeForm = "form"
	ModeURL  = "url"

	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// The fallbacks (Config.Fallbacks): the LLM-mediated one and the browser
// form.
const (
	FallbackLLM     = ViaModel
	FallbackBrowser = viaBrowser
)

// ProtocolInputRequests is the first protocol version in which a server
// must not send requests to the client during a tool call: it returns
// input requests instead and the client calls again (SEP-2322).
const ProtocolInputRequests = "2026-07-28"

var (
	// ErrInputRequired is the error of an elicitation that stopped the
	// run of its handler (input requests, the LLM-mediated fallback): the
	// handler returns it, and Run.Finish answers the call instead.
	ErrInputRequired = errors.New("elicit: input required from the client (the tool call will be retried with the answer)")

	// ErrNotInstalled is an elicitation outside a tool call the engine
	// began.
	ErrNotInstalled = errors.New("elicit: no Elicitor installed on this server (call Elicitor.Install)")

	// ErrMalformed is an answer that is not one: an unknown action, or
	// content that is not a JSON object. It matches form.ErrInvalidContent.
	ErrMalformed error = &alsoError{"elicit: malformed answer", form.ErrInvalidContent}
)

// Ask is one elicitation, as the front-end's calls (elicit.Form, Confirm,
// URL) hand it to Deliver, after the hooks of the request flow.
type Ask struct {
	// ID is the elicitation's ID; Deliver sets it to the ID of an earlier
	// run's answer that it replays.
	ID string
	// Mode is ModeForm or ModeURL; Message is shown to the user.
	Mode    string
	Message string
	// Schema is a form's requested schema, canonical.
	Schema json.RawMessage

	// TTL is how long the elicitation waits for its answer.
	TTL time.Duration
	// Key is its input request's key (2026-07-28), "" for one derived
	// from ID.
	Key string
	// Link returns the link of a URL-mode elicitation, given its
	// callback token.
	Link func(token string) string
	// RequiredError asks for -32042 instead of a wait (URL mode, before
	// 2026-07-28).
	RequiredError bool
	// Fallbacks are the fallbacks this elicitation may use, in order (nil:
	// Config.Fallbacks). Only those Config.Fallbacks enables are used.
	Fallbacks []string

	// Task, when set, delivers the elicitation as the input of the task
	// the call runs as, where the client can receive it.
	Task func(ctx context.Context) (*Response, error)
	// Unsupported answers an elicitation that neither the client nor a
	// fallback can take (the policy, or an error).
	Unsupported func(ctx context.Context) (*Response, error)

	peer Peer
	info *CallInfo
	fp   string // fingerprint, once a round computed it
}

// Response is an answer, as the path that delivered it got it: not
// validated yet (the front-end's result flow validates it).
type Response struct {
	Action  string
	Content map[string]any
	// Handed marks an answer that reached the waiting call without the
	// store, which had lost its records: nothing else of it is stored.
	Handed bool
}

// inputRequests reports whether the call's protocol forbids requests to
// the client and uses input requests instead.
func inputRequests(info *CallInfo) bool { return info.Protocol >= ProtocolInputRequests }

// path is one way an elicitation reaches the user. Each has its file and
// its state; choose picks one per elicitation.
type path interface {
	deliver(ctx context.Context, rd *round, q *Ask) (*Response, error)
}

// Deliver delivers q to the user of the call ctx carries (PeerFrom) and
// returns the raw answer: the answer of an earlier run of the call, when
// it has one at this position (a 2026-07-28 round, an LLM-mediated
// continuation); otherwise through the path the client and the Config
// allow. A run that stops for input returns an error matching
// ErrInputRequired; ErrNotInstalled without a call.
func (e *Engine) Deliver(ctx context.Context, q *Ask) (*Response, error) {
	if err := q.bind(ctx); err != nil {
		return nil, err
	}
	rd, _ := ctx.Value(roundKey{}).(*round)
	send := func(ctx context.Context, q *Ask) (*Response, error) {
		return choose(e, rd, q).deliver(ctx, rd, q)
	}
	if rd != nil {
		return rd.replay(ctx, q, send)
	}
	return send(ctx, q)
}

// choose returns the path of the elicitation q: the client's own, when it
// can receive it; otherwise the first fallback that applies, else the
// policy.
func choose(e *Engine, rd *round, q *Ask) path {
	info := q.info
	supported := (q.Mode == ModeForm && info.FormMode) || (q.Mode == ModeURL && info.URLMode)
	if rd != nil && rd.continued && inputRequests(info) {
		// The continuation of an LLM-mediated elicitation answers a tool
		// call of its own: it cannot stop for input requests.
		supported = false
	}
	switch {
	case supported && q.Task != nil:
		return taskPath{}
	case supported && q.Mode == ModeURL && q.RequiredError && !inputRequests(info):
		return urlRequiredPath{e}
	case supported && inputRequests(info):
		return inputPath{e}
	case supported:
		return blockingPath{e}
	}
	order := e.cfg.Fallbacks
	if q.Fallbacks != nil {
		order = q.Fallbacks
	}
	for _, f := range order {
		switch {
		case !slices.Contains(e.cfg.Fallbacks, f):
		case f == FallbackLLM && rd != nil:
			return modelPath{e}
		case f == FallbackBrowser && (browserPath{e}).canAnnounce(info):
			return browserPath{e}
		}
	}
	return policyPath{}
}

// taskPath is the input of a task (the front-end's: Ask.Task).
type taskPath struct{}

func (taskPath) deliver(ctx context.Context, _ *round, q *Ask) (*Response, error) {
	return q.Task(ctx)
}

// policyPath is an elicitation that the client cannot receive and no
// fallback applies to: Ask.Unsupported.
type policyPath struct{}

func (policyPath) deliver(ctx context.Context, _ *round, q *Ask) (*Response, error) {
	return q.Unsupported(ctx)
}

// ReportProgress sends a progress notification every
// Config.ProgressInterval while an elicitation of the call p waits, when
// the call carries a progress token: a client that resets its request
// timeout on progress then keeps waiting while the user reads the
// question. The returned func stops it.
func (e *Engine) ReportProgress(ctx context.Context, p Peer) (stop func()) {
	if p.Call().ProgressToken == nil || e.cfg.ProgressInterval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.cfg.ProgressInterval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.Progress(ctx, float64(n), "waiting for the user's answer")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// fromReply converts a client's reply. Content that is not a JSON object
// is malformed.
func fromReply(rp *Reply) (*Response, error) {
	res := &Response{Action: rp.Action}
	if len(rp.Content) > 0 {
		if err := json.Unmarshal(rp.Content, &res.Content); err != nil {
			return nil, fmt.Errorf("%w: content is not a JSON object", ErrMalformed)
		}
	}
	return res, nil
}

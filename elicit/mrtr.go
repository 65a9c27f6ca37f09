package elicit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
)

// The 2026-07-28 protocol (SEP-2322, multi round-trip requests) forbids a
// server to send requests to the client while it serves a call. A tool
// that needs input returns a result with inputRequests and an opaque
// requestState instead; the client fulfils the requests and calls the tool
// again with inputResponses and the requestState echoed.
//
// Here the handler is simply run again. The receiving middleware keeps a
// round for each call: the answers of the earlier rounds, from the sealed
// requestState, and the response to the last input request. The handler's
// elicitations are matched to them by position and by a fingerprint of
// what they ask (mode, message, schema); the first one without an answer
// records its input request and returns ErrInputRequired, and the
// middleware turns the handler's result into the input-required result.
//
// The requestState is a request-state token (package token): sealed,
// bound to the tool name, the hash of the arguments, the session (when
// the transport has one) and the subject, valid for the elicitation's TTL,
// and consumed once.
//
// A URL-mode elicitation is answered on a page, not in the retry: the
// retry that brings the client's "accept" waits for the page, at most
// Config.URLRoundWait, and then answers "still waiting": an input-required
// result without input requests, whose new requestState carries the same
// answers. The client sends it back at once (the TypeScript SDK after
// 250 ms) and the wait goes on. The go-sdk client fails a call at its
// third such result in a row, so there are at most stillWaitingRounds of
// them; the retry after the last waits until the TTL. With the
// TypeScript SDK's timeout of a minute per request, a call so survives a
// user who finishes on the page up to about 100 s after the link was
// given (2 × 20 s + 60 s). An answer that comes between two retries
// stays in the store for the next.

// asked is the elicitation a round asked for.
type asked struct {
	Key    string          `json:"key"` // its key in inputRequests
	FP     string          `json:"fp"`
	Mode   Mode            `json:"mode"`
	ID     string          `json:"id"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// answered is an answer of an earlier run of the handler, as the client
// (or the model, or the browser) sent it; it is validated again when the
// handler asks again.
type answered struct {
	FP      string         `json:"fp"`
	ID      string         `json:"id"`
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	// Wait marks a URL-mode elicitation the client accepted in an input
	// response: its callback is still to be waited for.
	Wait bool `json:"wait,omitempty"`
}

// stillWaitingRounds is how many "still waiting" results a call gets at
// most: the go-sdk client (v1.8.0) fails a call at the third
// input-required result without input requests
// (maxLoadSheddingMultiRoundTripRetries).
const stillWaitingRounds = 2

// requestState is the plaintext of a requestState token.
type requestState struct {
	Answers []answered `json:"answers,omitempty"`
	Asked   *asked     `json:"asked"`
	State   []byte     `json:"state,omitempty"` // SaveState
	// Waits counts the "still waiting" results of the call so far; one
	// or more marks the requestState of such a result, which asked
	// nothing: its last answer is the URL-mode one being waited for
	// (Asked names it).
	Waits int `json:"waits,omitempty"`
}

// round is the state of one run of a tool handler, which the receiving
// middleware puts in its context: the answers of the earlier runs of the
// same call, matched to the handler's elicitations by position, and where
// this run stopped for input. Runs repeat on 2026-07-28 (one per input
// request) and on the continuation of an LLMMediated elicitation.
type round struct {
	e       *Elicitor
	answers []answered
	next    int
	state   []byte
	waits   int // requestState.Waits of the requestState this run continues

	// Where the run stopped: an input request (2026-07-28) or an
	// LLM-mediated elicitation.
	ask     *asked
	params  *engine.ElicitParams
	ttl     time.Duration
	pending *modelAsk
	// still marks a stop at a URL-mode elicitation whose page was not
	// answered within the round's wait: ask names it, params is nil.
	still bool

	// continued marks the continuation of an LLM-mediated elicitation.
	// It answers a tool call of its own (fallbackTool), so it cannot stop
	// for input requests: there the client is treated as unable to elicit.
	continued bool

	// use is the claim of the requestState this run continues: it is
	// used up (committed) only when the handler receives the answer the
	// requestState brought (fresh, its position), and given back when
	// the run ends without that, so that the client can resend it after
	// a failure (a store fault) instead of finding it consumed.
	use       *oneshot.Use
	fresh     int
	delivered bool

	// ended are the slots of the URL-mode answers delivered to the
	// handler, which settle announces taken and whose records it removes.
	ended []*engine.Slot
}

type roundKey struct{}

// deliver commits the requestState's claim when the answer at position i
// is the one it brought; on failure the handler must not get the answer.
func (rd *round) deliver(ctx context.Context, i int) error {
	if rd.use == nil || rd.delivered || i != rd.fresh {
		return nil
	}
	if err := rd.use.Commit(ctx); err != nil {
		if errors.Is(err, oneshot.ErrLost) {
			return ErrUnknownElicitation // another request took it over
		}
		return fmt.Errorf("elicit: requestState: %w", err)
	}
	rd.delivered = true
	return nil
}

// settle gives back the claim of a requestState whose answer the handler
// never received. It then announces the URL-mode answers the run used as
// taken (engine.Slot.Taken) and removes their records.
func (rd *round) settle(ctx context.Context) {
	if rd.use != nil && !rd.delivered {
		rd.use.Release(context.WithoutCancel(ctx))
	}
	for _, s := range rd.ended {
		// Taken: the page that wrote it may say so. Only now that the
		// handler ran with it: a node that dies before must leave the
		// answer for the resend, as it does.
		s.Taken(ctx)
		s.End(ctx)
	}
}

func (rd *round) stopped() bool { return rd.ask != nil || rd.pending != nil }

// replay wraps the request flow of an elicitation of a run: the answer of
// an earlier run at this position, if there is one, else send. A new
// answer is kept, so that a later stop carries it.
func (rd *round) replay(e *Elicitor, ttl time.Duration, send RequestFunc) RequestFunc {
	return func(ctx context.Context, r *Request) (*Response, error) {
		if rd.stopped() {
			// An earlier elicitation of this run is unanswered: the
			// handler went on instead of returning.
			return nil, ErrInputRequired
		}
		fp := fingerprint(r)
		i := rd.next
		if i < len(rd.answers) {
			rd.next++
			a := &rd.answers[i]
			if a.FP != fp {
				// The handler asks something else than it did when this
				// answer was given: the answer is not for this question.
				return nil, ErrUnknownElicitation
			}
			r.ID = a.ID
			if r.Mode == ModeURL {
				if a.Wait {
					res, expiry, err := e.input.awaitURL(ctx, r, rd.roundWait(e, r.Call))
					if errors.Is(err, errStillWaiting) {
						// The requestState is used up: the client gets a
						// new one, for a round that waits again.
						if err := rd.deliver(ctx, i); err != nil {
							return nil, err
						}
						rd.ask = &asked{FP: a.FP, Mode: ModeURL, ID: a.ID}
						rd.still, rd.ttl = true, expiry.Sub(e.engine.Now())
						return nil, ErrInputRequired
					}
					if err == nil {
						a.Wait = false // a later run must not wait again
						err = rd.deliver(ctx, i)
					}
					if err != nil {
						// The answer stays in the store, for the resend of
						// the requestState, until its expiry.
						return nil, err
					}
					// Used up: its records go once the run is over, not
					// before the handler has the answer (issue 26), and
					// only then is it announced taken, for the page.
					rd.ended = append(rd.ended, e.engine.Slot(r.Call.who, r.ID, time.Time{}))
					return res, nil
				}
				if a.Action != Accept {
					e.engine.Slot(r.Call.who, r.ID, time.Time{}).End(ctx)
				}
			}
			if err := rd.deliver(ctx, i); err != nil {
				return nil, err
			}
			return &Response{Action: a.Action, Content: a.Content}, nil
		}
		res, err := send(ctx, r)
		switch {
		case rd.stopped():
			rd.next++
		case err == nil && res != nil:
			rd.next++
			rd.answers = append(rd.answers, answered{FP: fp, ID: r.ID, Action: res.Action, Content: res.Content})
		}
		return res, err
	}
}

// roundWait is how long this run waits for a URL-mode page: the
// Elicitor's round wait, or 0 (until the TTL) once the call had its
// "still waiting" results, or when its front-end cannot send one.
func (rd *round) roundWait(e *Elicitor, call *Call) time.Duration {
	if rd.waits >= stillWaitingRounds || call.info.HoldURLRounds {
		return 0
	}
	return e.roundWait
}

// fingerprint identifies what an elicitation asks.
func fingerprint(r *Request) string {
	h := sha256.New()
	for _, f := range []string{string(r.Mode), r.Message} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	if r.Schema != nil {
		h.Write(r.Schema.raw)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// inputRequest is the request flow on 2026-07-28 (within rd.replay): it
// records the input request this run stops at and returns
// ErrInputRequired.
func (pa *inputPath) inputRequest(ctx context.Context, rd *round, r *Request, ttl time.Duration, o *options) (*Response, error) {
	e := pa.e
	ask := &asked{Key: o.key, FP: fingerprint(r), Mode: r.Mode, ID: r.ID}
	if ask.Key == "" {
		ask.Key = "elicit-" + r.ID[:8]
	}
	p := &engine.ElicitParams{Mode: string(r.Mode), Message: r.Message}
	switch r.Mode {
	case ModeForm:
		ask.Schema = r.Schema.raw
		p.RequestedSchema = r.Schema.raw
	case ModeURL:
		// The callback may arrive on any node: the pending record is what
		// it resolves.
		expiry := e.engine.Now().Add(ttl)
		link, err := e.issueURL(r, ttl, o)
		if err != nil {
			return nil, err
		}
		s := e.engine.Slot(r.Call.who, r.ID, expiry)
		if err := e.putPending(ctx, s, &pendingRecord{Mode: ModeURL, Tool: r.Call.Tool, Expiry: expiry.UnixMilli()}); err != nil {
			return nil, err
		}
		e.engine.LeaveFor(r.Call.peer, s)
		p.URL = link
		p.ElicitationID = r.ID
	}
	rd.ask, rd.params, rd.ttl = ask, p, ttl
	return nil, ErrInputRequired
}

// open starts the round of the call p (engine.Flow.Open): on 2026-07-28,
// with the answers its requestState and responses bring. Refused before
// the handler runs, nothing of the call is done.
func (pa *inputPath) open(ctx context.Context, p engine.Peer, state string, responses map[string]json.RawMessage) (*round, error) {
	e := pa.e
	rd := &round{e: e}
	call := newCall(p)
	if state == "" || !call.inputRequests() {
		return rd, nil
	}
	var err error
	if rd.answers, rd.state, rd.waits, rd.use, err = e.input.continueRound(ctx, call, state, responses); err != nil {
		return nil, err
	}
	rd.fresh = len(rd.answers) - 1
	return rd, nil
}

// Context returns the handler's context, which carries rd.
func (rd *round) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundKey{}, rd)
}

// Settle gives back the requestState's claim if the handler never
// received its answer (settle).
func (rd *round) Settle(ctx context.Context) { rd.settle(ctx) }

// Stop turns the end of a run into what the client gets instead of the
// handler's result: input requests with a requestState, or the
// instructions of an LLM-mediated elicitation, or -32042 for a
// *urlRequiredError; nil for the handler's result as it is.
//
// The round decides, not what the handler returned: a handler that turned
// ErrInputRequired into a result of its own (a CallToolResult with
// IsError, a habit of Go handlers) still gets its question asked, and the
// Elicitor logs a warning, since that handler would also hide other
// errors of its elicitations.
func (rd *round) Stop(ctx context.Context, p engine.Peer, cause error) (*engine.Stop, error) {
	e := rd.e
	call := newCall(p)
	if !rd.stopped() {
		var ue *urlRequiredError
		if errors.As(cause, &ue) {
			return &engine.Stop{URLRequired: []*engine.ElicitParams{ue.params}}, nil
		}
		return nil, nil
	}
	if !errors.Is(cause, ErrInputRequired) {
		e.log.WarnContext(ctx, "elicit: a tool handler did not return the error of an elicitation that stopped for input; the client gets the input request all the same (return the error of Form, Confirm and URL as it is)",
			slog.String("tool", call.Tool))
	}
	switch {
	case rd.still:
		// Still waiting: input requests, none of them, and a new state.
		st := requestState{Answers: rd.answers, Asked: rd.ask, State: rd.state, Waits: rd.waits + 1}
		tok, err := e.input.issueState(call, &st, rd.ttl)
		if err != nil {
			return nil, err
		}
		return &engine.Stop{InputRequests: map[string]*engine.ElicitParams{}, RequestState: tok}, nil
	case rd.ask != nil:
		st := requestState{Answers: rd.answers, Asked: rd.ask, State: rd.state}
		tok, err := e.input.issueState(call, &st, rd.ttl)
		if err != nil {
			return nil, err
		}
		return &engine.Stop{InputRequests: map[string]*engine.ElicitParams{rd.ask.Key: rd.params}, RequestState: tok}, nil
	}
	return e.model.pendingStop(ctx, call, rd)
}

// stateBinding is what the requestState of the call is bound to.
func stateBinding(c *Call) (engine.StateBinding, error) {
	return engine.BindState(c.who, c.Tool, c.info.Arguments)
}

func (pa *inputPath) issueState(c *Call, st *requestState, ttl time.Duration) (string, error) {
	e := pa.e
	b, err := stateBinding(c)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	pt, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	if len(pt) > token.MaxStateSize {
		return "", ErrTooLarge
	}
	return e.engine.IssueState(b, st.Asked.ID, pt, ttl)
}

// continueRound verifies and claims the requestState of a retried call
// and returns the answers so far, the last one from the inputResponses,
// and the claim, which the round commits when the handler receives that
// answer (round.deliver) and gives back otherwise (round.settle), so that
// a run that fails before (a store fault) leaves the requestState usable
// for the client's resend. A requestState that does not verify (tampered,
// of another call, session or subject, expired, or replayed) and a
// response of the wrong kind are invalid params: the JSON-RPC error
// -32602, the same for every reason of the first kind. A round without the
// response asks the question again.
func (pa *inputPath) continueRound(ctx context.Context, call *Call, requestState string, responses map[string]json.RawMessage) (answers []answered, state []byte, waits int, use *oneshot.Use, err error) {
	e := pa.e
	b, err := stateBinding(call)
	if err != nil {
		return nil, nil, 0, nil, errBadState
	}
	c, use, err := e.engine.ClaimState(ctx, b, requestState)
	switch {
	case errors.Is(err, token.ErrInProgress):
		return nil, nil, 0, nil, errAnswerInProgress
	case errors.Is(err, engine.ErrBadState):
		return nil, nil, 0, nil, errBadState
	case err != nil:
		return nil, nil, 0, nil, err
	}
	st, fresh, err := e.input.roundAnswers(ctx, c, responses, b.Who)
	switch {
	case err != nil:
		use.Release(context.WithoutCancel(ctx))
		return nil, nil, 0, nil, err
	case !fresh:
		// Nothing to deliver: the requestState is used up now, as the
		// handler asks again under a new one.
		if err := use.Commit(ctx); err != nil {
			use.Release(context.WithoutCancel(ctx))
			return nil, nil, 0, nil, fmt.Errorf("elicit: requestState: %w", err)
		}
		return st.Answers, st.State, st.Waits, nil, nil
	}
	return st.Answers, st.State, st.Waits, use, nil
}

// roundAnswers reads a verified requestState, with the client's response
// to its input request as the last answer; fresh reports whether there is
// one. The requestState of a "still waiting" result asked nothing: its
// last answer, the URL-mode elicitation being waited for, is the fresh one
// (the client's input responses, if any, are ignored).
func (pa *inputPath) roundAnswers(ctx context.Context, c *token.Claims, responses map[string]json.RawMessage, who engine.Identity) (st *requestState, fresh bool, err error) {
	e := pa.e
	st = &requestState{}
	if err := json.Unmarshal(c.State, st); err != nil || st.Asked == nil || st.Asked.ID != c.ElicitationID {
		return nil, false, errBadState
	}
	if st.Waits > 0 {
		if n := len(st.Answers); n == 0 || !st.Answers[n-1].Wait || st.Answers[n-1].ID != st.Asked.ID {
			return nil, false, errBadState
		}
		return st, true, nil
	}
	raw, ok := responses[st.Asked.Key]
	if !ok || raw == nil {
		// No answer in this round: the handler runs again and asks again.
		// A URL-mode elicitation asked with a new ID; this one's record
		// goes.
		if st.Asked.Mode == ModeURL {
			e.engine.Slot(who, st.Asked.ID, time.Time{}).End(ctx)
		}
		return st, false, nil
	}
	resp, ok := elicitResult(raw)
	if !ok {
		return nil, false, &engine.InvalidParamsError{Message: fmt.Sprintf("inputResponses[%q] is not an elicitation result", clip(st.Asked.Key))}
	}
	a := answered{FP: st.Asked.FP, ID: st.Asked.ID, Action: resp.Action}
	switch {
	case a.Action == Accept && st.Asked.Mode == ModeForm:
		a.Content = resp.Content
	case a.Action == Accept && st.Asked.Mode == ModeURL:
		a.Wait = true
	}
	st.Answers = append(st.Answers, a)
	return st, true, nil
}

// errBadState answers a requestState that does not verify: tampered,
// expired, already used, or issued for another call, session or subject.
// It is one error for all of them, as ErrUnknownElicitation is.
var errBadState error = &engine.InvalidParamsError{Message: "requestState is invalid, expired or already used; call again without it", Err: engine.ErrBadState}

// elicitResult decodes an input response that is an elicitation result:
// one with "action" and without "roots", as the SDKs tell them apart.
func elicitResult(raw json.RawMessage) (*Response, bool) {
	var probe struct {
		Action json.RawMessage `json:"action"`
		Roots  json.RawMessage `json:"roots"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Action == nil || probe.Roots != nil {
		return nil, false
	}
	var res struct {
		Action  Action         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return nil, false
	}
	return &Response{Action: res.Action, Content: res.Content}, true
}

// errStillWaiting is awaitURL's wait that ended before the
// elicitation's expiry.
var errStillWaiting = errors.New("elicit: still waiting for the page")

// awaitURL waits for the callback of a URL-mode elicitation the client
// accepted in an earlier round, then notifies the client. With a limit, it
// waits at most that long and then returns errStillWaiting, leaving the
// elicitation in place for the next round; expiry is the elicitation's.
func (pa *inputPath) awaitURL(ctx context.Context, r *Request, limit time.Duration) (_ *Response, expiry time.Time, _ error) {
	e := pa.e
	s := e.engine.Slot(r.Call.who, r.ID, time.Time{})
	first, err := e.store.Subscribe(ctx, s.Channel())
	if err != nil {
		return nil, expiry, fmt.Errorf("elicit: subscribe: %w", err)
	}
	sub := &engine.Subscription{Subscription: first}
	defer func() { sub.Close() }()
	var rec pendingRecord
	if err := s.Get(ctx, engine.PurposePending, &rec); err != nil {
		// Gone: expired, or ended after an earlier run delivered it.
		if res, ok, err := readResult(ctx, s); ok || err != nil {
			return res, expiry, err
		}
		return nil, expiry, ErrTimeout
	}
	s.Expiry = time.UnixMilli(rec.Expiry)
	until := s.Expiry
	bounded := limit > 0 && e.engine.Now().Add(limit).Before(s.Expiry)
	if bounded {
		until = time.Now().Add(limit)
	}
	rctx, end := resume(ctx, e.hooks, rec.Mode, rec.Carried)
	res, err := await(rctx, until, s, sub)
	var se *engine.StoreError
	if bounded && ctx.Err() == nil && (errors.Is(err, ErrTimeout) || errors.As(err, &se)) {
		// The round's wait is over, with a store that did not answer at
		// its end too: the answer may be there, for the next round.
		end(ErrInputRequired)
		return nil, s.Expiry, errStillWaiting
	}
	end(err)
	if err != nil {
		s.End(ctx)
		return nil, s.Expiry, err
	}
	notifyComplete(ctx, r.Call.peer, r.ID) // accepted or declined on the page
	return res, s.Expiry, nil
}

// inputPath is the input requests of 2026-07-28, with the sealed
// requestState, and the rounds that continue them.
type inputPath struct{ e *Elicitor }

func (pa *inputPath) deliver(ctx context.Context, rd *round, r *Request, ttl time.Duration, o *options) (*Response, error) {
	if rd == nil {
		return nil, ErrNotInstalled
	}
	return pa.inputRequest(ctx, rd, r, ttl, o)
}

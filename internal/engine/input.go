package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
)

// The input requests of 2026-07-28 (see round.go). The requestState is a
// request-state token (package token): sealed, bound to the tool name,
// the hash of the arguments, the session (when the transport has one)
// and the subject, valid for the elicitation's TTL, and consumed once.
//
// A URL-mode elicitation is answered on a page, not in the retry: the
// retry that brings the client's "accept" waits for the page, at most
// Config.URLRoundWait, and then answers "still waiting": an
// input-required result without input requests, whose new requestState
// carries the same answers. The client sends it back at once (the
// TypeScript SDK after 250 ms) and the wait goes on. The go-sdk client
// fails a call at its third such result in a row, so there are at most
// stillWaitingRounds of them; the retry after the last waits until the
// TTL. With the TypeScript SDK's timeout of a minute per request, a call
// so survives a user who finishes on the page up to about 100 s after the
// link was given (2 × 20 s + 60 s). An answer that comes between two
// retries stays in the store for the next.

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

// inputPath is the input requests of 2026-07-28, with the sealed
// requestState, and the rounds that continue them.
type inputPath struct{ e *Engine }

func (pa inputPath) deliver(ctx context.Context, rd *round, q *Ask) (*Response, error) {
	if rd == nil {
		return nil, ErrNotInstalled
	}
	return pa.inputRequest(ctx, rd, q)
}

// inputRequest is the request flow on 2026-07-28 (within rd.replay): it
// records the input request this run stops at and returns
// ErrInputRequired.
func (pa inputPath) inputRequest(ctx context.Context, rd *round, q *Ask) (*Response, error) {
	e := pa.e
	ask := &asked{Key: q.InputKey(), FP: fingerprint(q), Mode: q.Mode, ID: q.ID}
	p := q.Params()
	switch q.Mode {
	case ModeURL:
		link, s, err := pendURL(ctx, e, q)
		if err != nil {
			return nil, err
		}
		e.LeaveFor(q.peer, s)
		p.URL = link
		p.ElicitationID = q.ID
	}
	rd.ask, rd.params, rd.ttl = ask, p, q.TTL
	return nil, ErrInputRequired
}

// openRound starts the round of the call p: on 2026-07-28, with the
// answers its requestState and responses bring. Refused before the
// handler runs, nothing of the call is done.
func openRound(ctx context.Context, e *Engine, p Peer, state string, responses map[string]json.RawMessage) (*round, error) {
	rd := &round{e: e}
	info := p.Call()
	if state == "" || !inputRequests(info) {
		return rd, nil
	}
	var err error
	if rd.answers, rd.state, rd.waits, rd.use, err = (inputPath{e}).continueRound(ctx, info, state, responses); err != nil {
		return nil, err
	}
	rd.fresh = len(rd.answers) - 1
	return rd, nil
}

// issueState seals st as the requestState of the call info.
func issueState(e *Engine, info *CallInfo, st *requestState, ttl time.Duration) (string, error) {
	b, err := BindState(info.Who, info.Tool, info.Arguments)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	pt, err := encodeState(st)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	if len(pt) > token.MaxStateSize {
		return "", ErrTooLarge
	}
	return e.IssueState(b, st.Asked.ID, pt, ttl)
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
func (pa inputPath) continueRound(ctx context.Context, info *CallInfo, requestState string, responses map[string]json.RawMessage) (answers []answered, state []byte, waits int, use *oneshot.Use, err error) {
	e := pa.e
	b, err := BindState(info.Who, info.Tool, info.Arguments)
	if err != nil {
		return nil, nil, 0, nil, errBadState
	}
	c, use, err := e.ClaimState(ctx, b, requestState)
	switch {
	case errors.Is(err, token.ErrInProgress):
		return nil, nil, 0, nil, ErrAnswerInProgress
	case errors.Is(err, ErrBadState):
		return nil, nil, 0, nil, errBadState
	case err != nil:
		return nil, nil, 0, nil, err
	}
	st, fresh, err := pa.roundAnswers(ctx, c, responses, b.Who)
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
func (pa inputPath) roundAnswers(ctx context.Context, c *token.Claims, responses map[string]json.RawMessage, who Identity) (st *requestState, fresh bool, err error) {
	st, err = decodeState(c.State, c.ElicitationID)
	if err != nil {
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
			pa.e.Slot(who, st.Asked.ID, time.Time{}).End(ctx)
		}
		return st, false, nil
	}
	resp, ok := elicitResult(raw)
	if !ok {
		return nil, false, &InvalidParamsError{Message: fmt.Sprintf("inputResponses[%q] is not an elicitation result", clip(st.Asked.Key))}
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

// clip shortens a client-chosen key for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// errBadState answers a requestState that does not verify: tampered,
// expired, already used, or issued for another call, session or subject.
// It is one error for all of them, as ErrUnknownElicitation is.
var errBadState error = &InvalidParamsError{Message: "requestState is invalid, expired or already used; call again without it", Err: ErrBadState}

// elicitResult decodes an input response that is an elicitation result:
// one with "action" and without "roots", as the SDKs tell them apart.
func elicitResult(raw json.RawMessage) (*Response, bool) {
	var res struct {
		Action  json.RawMessage `json:"action"`
		Roots   json.RawMessage `json:"roots"`
		Content map[string]any  `json:"content"`
	}
	if json.Unmarshal(raw, &res) != nil || res.Action == nil || res.Roots != nil {
		return nil, false
	}
	action, ok := plainString(res.Action)
	if !ok && json.Unmarshal(res.Action, &action) != nil {
		return nil, false
	}
	return &Response{Action: action, Content: res.Content}, true
}

// plainString reads a JSON string without escapes or control characters
// ("accept") without a decoder; ok is false for anything else, which the
// caller decodes.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return string(body), true
}

// errStillWaiting is awaitURL's wait that ended before the
// elicitation's expiry.
var errStillWaiting = errors.New("elicit: still waiting for the page")

// awaitURL waits for the callback of the URL-mode elicitation q, which
// the client accepted (in an earlier round, or a task's input), then
// notifies the client. With a limit, it waits at most that long and then
// returns an error that is not the call's (a round answers "still
// waiting"), leaving the elicitation in place for the next round; expiry
// is the elicitation's. q belongs to the call ctx carries.
func awaitURL(ctx context.Context, e *Engine, q *Ask, limit time.Duration) (_ *Response, expiry time.Time, _ error) {
	if err := q.bind(ctx); err != nil {
		return nil, expiry, err
	}
	s := e.Slot(q.info.Who, q.ID, time.Time{})
	first, err := e.store.Subscribe(ctx, s.Channel())
	if err != nil {
		return nil, expiry, fmt.Errorf("elicit: subscribe: %w", err)
	}
	sub := &Subscription{Subscription: first}
	defer func() { sub.Close() }()
	var rec pendingRecord
	if err := s.Get(ctx, PurposePending, &rec); err != nil {
		// Gone: expired, or ended after an earlier run delivered it.
		if res, ok, err := readResult(ctx, s); ok || err != nil {
			return res, expiry, err
		}
		return nil, expiry, ErrTimeout
	}
	s.Expiry = time.UnixMilli(rec.Expiry)
	until := s.Expiry
	bounded := limit > 0 && e.Now().Add(limit).Before(s.Expiry)
	if bounded {
		until = time.Now().Add(limit)
	}
	rctx, end := e.cfg.resume(ctx, rec.Mode, rec.Carried)
	res, err := await(rctx, until, s, sub)
	var se *StoreError
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
	notifyComplete(ctx, q.peer, q.ID) // accepted or declined on the page
	return res, s.Expiry, nil
}

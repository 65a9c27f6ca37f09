package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// This file is what a front-end calls around a tool call: Begin before
// its handler runs, Run.Finish after; Answer for FallbackTool; the tool
// list (ListsFallbackTool); the end of a session (SessionEnded, or
// SessionWatcher). Both front-ends call the same operations; what they
// return is the SDK's to put on the wire.

// FallbackTool is the tool through which the model sends the answer of an
// LLM-mediated elicitation, listed as FallbackToolTitle,
// FallbackToolDescription and FallbackToolSchema (its input schema).
const FallbackTool = "sendElicitationResult"

const (
	FallbackToolTitle       = "Send the user's answer"
	FallbackToolDescription = "Sends the user's answer to a question that a tool asked (its result said so, with an elicitation ID). " +
		"Call it only with what the user actually answered. It returns the result of the tool that asked."
)

// FallbackToolSchema is the input schema of FallbackTool.
var FallbackToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"elicitId":{"type":"string","description":"The elicitation ID the tool gave."},` +
	`"action":{"type":"string","enum":["accept","decline","cancel"],"description":"accept with content; decline if the user refused; cancel if they dismissed the question."},` +
	`"content":{"type":"object","description":"The answer, matching the requested schema (accept only)."}},` +
	`"required":["elicitId","action"],"additionalProperties":false}`)

// Stop is how a tool call that stopped for the user is answered instead of
// with its handler's result. Exactly one of its forms is set.
type Stop struct {
	// InputRequests (2026-07-28) are the input requests of an
	// input-required result, by key, and RequestState its sealed
	// requestState. Empty but not nil, it is "still waiting" (a URL-mode
	// page not answered yet): the front-end sends "inputRequests": {},
	// not omitted, which a client would take for a complete result.
	InputRequests map[string]*ElicitParams
	RequestState  string

	// Pending (the LLM-mediated fallback) is a complete tool result that
	// hands the elicitation to the model.
	Pending *Pending

	// URLRequired (before 2026-07-28) are the elicitations of the JSON-RPC
	// error -32042 (URLElicitationRequired).
	URLRequired []*ElicitParams
}

// Pending is the tool result of an LLM-mediated elicitation: Text as its
// one text content (everything the model needs is there), Meta as its
// _meta. It is not an error result.
type Pending struct {
	Text string
	Meta map[string]any
}

// Answer is what a call of FallbackTool gets: a refusal (ToolError, the
// text of a tool error result), the kept result of an answer given twice
// (Replayed, the wire JSON of a tool result, marked in its _meta), or the
// end of the tool it continued: the next stop (Stop), else the
// continuation's own result, which the front-end kept.
type Answer struct {
	ToolError string
	Replayed  json.RawMessage
	Stop      *Stop

	// Keep, when set, keeps the result the front-end answers the call
	// with (the continuation's, or the one it built from Stop.Pending),
	// sealed, for a resend of the same answer: call it when the call ends
	// with a result, not with a JSON-RPC error. The result is encoded as
	// JSON.
	Keep func(ctx context.Context, result any)
}

// Continue runs the tool that asked an LLM-mediated elicitation again,
// once its answer came: the handler of tool with args, in ctx (which
// carries the continued call, see PeerFrom). The front-end keeps the
// handler's result and returns the handler's error, or the error its
// tool error result reports (see Run.Finish).
type Continue func(ctx context.Context, tool string, args json.RawMessage) (cause error)

// InvalidParamsError is an error a front-end answers with JSON-RPC -32602,
// its Error() the message (never quoting an answer). A requestState that
// does not verify is one that also matches ErrBadState.
type InvalidParamsError struct {
	Message string
	Err     error // what it is, or nil
}

func (e *InvalidParamsError) Error() string { return "elicit: invalid params: " + e.Message }
func (e *InvalidParamsError) Unwrap() error { return e.Err }

// SessionWatcher is implemented by a Peer whose front-end learns of the
// end of a session only when asked (the go-sdk): the engine calls
// WatchEnd, at most once per session and Peer, when the session leaves an
// elicitation pending, and ended must be called when the session ends.
// A front-end that is told of every session's end (a hook) calls
// Engine.SessionEnded instead.
type SessionWatcher interface {
	WatchEnd(ended func())
}

// OwnsState reports whether a requestState is the engine's, or none: one
// that is not was issued by something else on the server, and the call
// passes the engine by (the front-end runs the handler alone).
func OwnsState(state string) bool {
	return state == "" || strings.HasPrefix(state, "ev2.") || strings.HasPrefix(state, "ev1.")
}

// Run is a tool call between Begin and Finish.
type Run struct {
	round  *round
	p      Peer
	done   func()
	settle sync.Once
}

// Begin starts the tool call p, before its handler runs: it tracks the
// call (Close and EndCalls end it) and, on 2026-07-28, claims the
// requestState state and opens the earlier answers and the client's
// inputResponses (responses: the raw JSON of each, by key; nil for
// none). It returns the context to run the handler with, which carries p
// (PeerFrom) and what elicit's calls need.
//
// An error means the handler must not run: an *InvalidParamsError is
// JSON-RPC -32602 (a requestState that does not verify among them, which
// matches ErrBadState); others (ErrClosed, a store's) are the call's
// error. A requestState that OwnsState refuses must not come
// here.
func (e *Engine) Begin(ctx context.Context, p Peer, state string, responses map[string]json.RawMessage) (context.Context, *Run, error) {
	ctx, done, err := e.Track(ctx, p.Call().Who)
	if err != nil {
		return nil, nil, err
	}
	ctx = WithPeer(e.cfg.prepare(ctx), p)
	rd, err := openRound(ctx, e, p, state, responses)
	if err != nil {
		done()
		return nil, nil, err
	}
	return rd.context(ctx), &Run{round: rd, p: p, done: done}, nil
}

// Finish ends the run, once its handler returned; ctx is Begin's. cause
// is the handler's error, or the error its tool error result reports, or
// nil. It returns the Stop to answer the call with instead of the
// handler's result, or nil to pass that result on. A handler that hid the
// stop of an elicitation in a result of its own still gets its question
// asked.
func (r *Run) Finish(ctx context.Context, cause error) (*Stop, error) {
	defer r.End(ctx)
	r.settle.Do(func() { r.round.settle(ctx) })
	return r.round.stop(ctx, r.p, cause)
}

// End ends the run without a result (the handler panicked): it gives
// back what the run did not use and stops tracking the call. Finish
// calls it; calling it again does nothing.
func (r *Run) End(ctx context.Context) {
	r.settle.Do(func() { r.round.settle(ctx) })
	r.done()
}

// Answer serves a call p of FallbackTool: it checks, validates and uses
// up the answer in p's arguments, then runs cont, the tool that asked,
// with the answer. Refusals are tool errors (Answer.ToolError), which the
// model reads; the elicitation stays pending after an invalid answer.
// An error is the call's (a store that failed).
func (e *Engine) Answer(ctx context.Context, p Peer, cont Continue) (*Answer, error) {
	ctx = WithPeer(e.cfg.prepare(ctx), p)
	return modelPath{e}.answer(ctx, p, cont)
}

// ListsFallbackTool reports whether tools/list shows FallbackTool to a
// client with these elicitation modes (read per request).
func (e *Engine) ListsFallbackTool(formMode, urlMode bool) bool {
	return slices.Contains(e.cfg.Fallbacks, FallbackLLM) && (!formMode || !urlMode)
}

// LeaveFor records that the call p left the elicitation of s pending
// (nothing waits for it), and makes sure the end of its session deletes
// it: through p when p is a SessionWatcher, else the front-end calls
// SessionEnded.
func (e *Engine) LeaveFor(p Peer, s *Slot) {
	if !e.left.leave(s) {
		return
	}
	if w, ok := p.(SessionWatcher); ok {
		session := s.Who.Session
		w.WatchEnd(func() { e.SessionEnded(session) })
	}
}

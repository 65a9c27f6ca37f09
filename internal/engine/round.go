package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/elicitvault/elicitvault/internal/oneshot"
)

// The 2026-07-28 protocol (SEP-2322, multi round-trip requests) forbids a
// server to send requests to the client while it serves a call. A tool
// that needs input returns a result with inputRequests and an opaque
// requestState instead; the client fulfils the requests and calls the tool
// again with inputResponses and the requestState echoed.
//
// Here the handler is simply run again. Begin keeps a round for each
// call: the answers of the earlier rounds, from the sealed requestState,
// and the response to the last input request. The handler's elicitations
// are matched to them by position and by a fingerprint of what they ask
// (mode, message, schema); the first one without an answer records its
// input request and returns ErrInputRequired, and Run.Finish turns the
// handler's result into the input-required result (input.go).
//
// The same round carries the continuation of an LLM-mediated elicitation
// (model.go): the answers of the earlier runs, from the pending record,
// and the model's answer as the last.

// asked is the elicitation a round asked for. It does not carry the
// schema: the answer is validated against the schema the handler asks
// with when it runs again, and the fingerprint binds the two. (Earlier
// versions wrote it as "schema"; a requestState that has it still
// decodes.)
type asked struct {
	Key  string `json:"key"` // its key in inputRequests
	FP   string `json:"fp"`
	Mode string `json:"mode"`
	ID   string `json:"id"`
}

// answered is an answer of an earlier run of the handler, as the client
// (or the model, or the browser) sent it; it is validated again when the
// handler asks again.
type answered struct {
	FP      string         `json:"fp"`
	ID      string         `json:"id"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	// Wait marks a URL-mode elicitation the client accepted in an input
	// response: its callback is still to be waited for.
	Wait bool `json:"wait,omitempty"`
}

// round is the state of one run of a tool handler, which Begin puts in
// its context: the answers of the earlier runs of the same call, matched
// to the handler's elicitations by position, and where this run stopped
// for input. Runs repeat on 2026-07-28 (one per input request) and on the
// continuation of an LLM-mediated elicitation.
type round struct {
	e       *Engine
	answers []answered
	next    int
	state   []byte
	waits   int // requestState.Waits of the requestState this run continues

	// Where the run stopped: an input request (2026-07-28) or an
	// LLM-mediated elicitation.
	ask     *asked
	params  *ElicitParams
	ttl     time.Duration
	pending *modelAsk
	// still marks a stop at a URL-mode elicitation whose page was not
	// answered within the round's wait: ask names it, params is nil.
	still bool

	// continued marks the continuation of an LLM-mediated elicitation.
	// It answers a tool call of its own (FallbackTool), so it cannot stop
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
	ended []*Slot
}

type roundKey struct{}

// context returns the handler's context, which carries rd.
func (rd *round) context(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundKey{}, rd)
}

// SaveState keeps state (a handler's, JSON) with the run of the tool call
// ctx belongs to, for the next run of the same call; false outside a run
// Begin began.
func SaveState(ctx context.Context, state []byte) bool {
	rd, ok := ctx.Value(roundKey{}).(*round)
	if ok {
		rd.state = state
	}
	return ok
}

// LoadState returns the state an earlier run of the tool call ctx belongs
// to saved (SaveState), or nil; ok is false outside a run Begin began.
func LoadState(ctx context.Context) (state []byte, ok bool) {
	rd, ok := ctx.Value(roundKey{}).(*round)
	if !ok {
		return nil, false
	}
	return rd.state, true
}

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
// taken (Slot.Taken) and removes their records.
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

// replay is the request flow of an elicitation of a run: the answer of an
// earlier run at this position, if there is one, else send. A new answer
// is kept, so that a later stop carries it.
func (rd *round) replay(ctx context.Context, q *Ask, send func(context.Context, *Ask) (*Response, error)) (*Response, error) {
	e := rd.e
	if rd.stopped() {
		// An earlier elicitation of this run is unanswered: the handler
		// went on instead of returning.
		return nil, ErrInputRequired
	}
	fp := fingerprint(q)
	i := rd.next
	if i < len(rd.answers) {
		rd.next++
		a := &rd.answers[i]
		if a.FP != fp {
			// The handler asks something else than it did when this
			// answer was given: the answer is not for this question.
			return nil, ErrUnknownElicitation
		}
		q.ID = a.ID
		if q.Mode == ModeURL {
			if a.Wait {
				res, expiry, err := awaitURL(ctx, e, q, rd.roundWait())
				if errors.Is(err, errStillWaiting) {
					// The requestState is used up: the client gets a new
					// one, for a round that waits again.
					if err := rd.deliver(ctx, i); err != nil {
						return nil, err
					}
					rd.ask = &asked{FP: a.FP, Mode: ModeURL, ID: a.ID}
					rd.still, rd.ttl = true, expiry.Sub(e.Now())
					return nil, ErrInputRequired
				}
				if err == nil {
					a.Wait = false // a later run must not wait again
					err = rd.deliver(ctx, i)
				}
				if err != nil {
					// The answer stays in the store, for the resend of the
					// requestState, until its expiry.
					return nil, err
				}
				// Used up: its records go once the run is over, not before
				// the handler has the answer (issue 26), and only then is
				// it announced taken, for the page.
				rd.ended = append(rd.ended, e.Slot(q.info.Who, q.ID, time.Time{}))
				return res, nil
			}
			if a.Action != Accept {
				e.Slot(q.info.Who, q.ID, time.Time{}).End(ctx)
			}
		}
		if err := rd.deliver(ctx, i); err != nil {
			return nil, err
		}
		return &Response{Action: a.Action, Content: a.Content}, nil
	}
	res, err := send(ctx, q)
	switch {
	case rd.stopped():
		rd.next++
	case err == nil && res != nil:
		rd.next++
		rd.answers = append(rd.answers, answered{FP: fp, ID: q.ID, Action: res.Action, Content: res.Content})
	}
	return res, err
}

// roundWait is how long this run waits for a URL-mode page: the
// Config's round wait, or 0 (until the TTL) once the call had its "still
// waiting" results.
func (rd *round) roundWait() time.Duration {
	if rd.waits >= stillWaitingRounds {
		return 0
	}
	return rd.e.cfg.URLRoundWait
}

// fingerprint identifies what an elicitation asks: the first 16 bytes of
// SHA-256 over len(mode) ":" mode len(message) ":" message schema, the
// lengths in decimal, in base64url. It is computed once per Ask.
func fingerprint(q *Ask) string {
	if q.fp == "" {
		q.fp = computeFingerprint(q)
	}
	return q.fp
}

func computeFingerprint(q *Ask) string {
	var buf [512]byte
	b := buf[:0]
	for _, f := range [...]string{q.Mode, q.Message} {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(append(b, ':'), f...)
	}
	sum := sha256.Sum256(append(b, q.Schema...))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// stop turns the end of a run into what the client gets instead of the
// handler's result: input requests with a requestState, or the
// instructions of an LLM-mediated elicitation, or -32042 for a
// *URLRequiredError; nil for the handler's result as it is.
//
// The round decides, not what the handler returned: a handler that turned
// ErrInputRequired into a result of its own (a CallToolResult with
// IsError, a habit of Go handlers) still gets its question asked, and the
// engine logs a warning, since that handler would also hide other errors
// of its elicitations.
func (rd *round) stop(ctx context.Context, p Peer, cause error) (*Stop, error) {
	e := rd.e
	info := p.Call()
	if !rd.stopped() {
		var ue *URLRequiredError
		if errors.As(cause, &ue) {
			return &Stop{URLRequired: []*ElicitParams{ue.params}}, nil
		}
		return nil, nil
	}
	if !errors.Is(cause, ErrInputRequired) {
		e.cfg.Logger.WarnContext(ctx, "elicit: a tool handler did not return the error of an elicitation that stopped for input; the client gets the input request all the same (return the error of Form, Confirm and URL as it is)",
			slog.String("tool", info.Tool))
	}
	switch {
	case rd.still:
		// Still waiting: input requests, none of them, and a new state.
		st := requestState{Answers: rd.answers, Asked: rd.ask, State: rd.state, Waits: rd.waits + 1}
		tok, err := issueState(e, info, &st, rd.ttl)
		if err != nil {
			return nil, err
		}
		return &Stop{InputRequests: map[string]*ElicitParams{}, RequestState: tok}, nil
	case rd.ask != nil:
		st := requestState{Answers: rd.answers, Asked: rd.ask, State: rd.state}
		tok, err := issueState(e, info, &st, rd.ttl)
		if err != nil {
			return nil, err
		}
		return &Stop{InputRequests: map[string]*ElicitParams{rd.ask.Key: rd.params}, RequestState: tok}, nil
	}
	return modelPath{e}.pendingStop(ctx, p, rd)
}

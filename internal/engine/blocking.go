package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// blockingPath is the blocking request of protocols before 2026-07-28:
// elicitation/create, and the wait for its answer.
type blockingPath struct{ e *Engine }

func (pa blockingPath) deliver(ctx context.Context, _ *round, q *Ask) (*Response, error) {
	return pa.blocking(ctx, q)
}

// blocking sends elicitation/create and waits for the answer, the TTL, a
// newer elicitation in the session, or ctx. For URL mode the answer that
// counts is the one the callback writes to the store; the client's own
// reply only says whether the user agreed to open the URL.
func (pa blockingPath) blocking(ctx context.Context, q *Ask) (*Response, error) {
	e := pa.e
	info := q.info
	expiry := e.Now().Add(q.TTL)
	s := e.Slot(info.Who, q.ID, expiry)
	s.Local = q.Mode == ModeForm // the client's reply is the answer
	rec := &pendingRecord{Mode: q.Mode, Tool: info.Tool, Expiry: expiry.UnixMilli()}
	params := q.Params()
	switch q.Mode {
	case ModeForm:
		rec.Schema = q.Schema
	case ModeURL:
		link, err := issueURL(e, q)
		if err != nil {
			return nil, err
		}
		params.URL = link
		params.ElicitationID = q.ID
		rec = urlPending(e, q, expiry)
	}

	if s.Local {
		if err := beginLocal(ctx, e, s, rec); err != nil {
			return nil, err
		}
		defer s.End(ctx)
		return pa.blockingForm(ctx, q, s, params)
	}
	first, err := beginPending(ctx, e, s, rec)
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	sub := &Subscription{Subscription: first}
	defer func() { sub.Close() }()

	wctx, cancel := context.WithTimeout(ctx, q.TTL)
	defer cancel()

	type reply struct {
		res *Reply
		err error
	}
	replies := make(chan reply, 1)
	go func() {
		res, err := q.peer.Elicit(wctx, params)
		replies <- reply{res, err}
	}()
	waitReply := true
	defer func() {
		cancel()
		if waitReply {
			<-replies // the request is cancelled; release its goroutine
		}
	}()

	// In URL mode the callback can beat the client's reply; it is kept
	// until the reply comes, so that the request is not cancelled.
	var early *Response
	rr := s.NewReader()
	local, done := s.WaitLocal()
	defer done()
	for {
		select {
		case lr := <-local: // a page of this node, the store having lost the records
			if replies != nil {
				early = response(lr)
				continue
			}
			return pa.urlDone(ctx, q, response(lr))
		case rp := <-replies:
			waitReply = false
			replies = nil
			if rp.err != nil {
				if wctx.Err() != nil {
					return nil, WaitErr(ctx)
				}
				return nil, clientError(rp.err)
			}
			res, err := fromReply(rp.res)
			if err != nil || q.Mode == ModeForm {
				return res, err
			}
			if early == nil && res.Action != Accept {
				return res, nil
			}
			// URL mode: the user went to the page; the callback decides.
			if early == nil {
				var ok bool
				if early, ok, err = readResponse(ctx, rr); err != nil {
					return nil, err
				} else if !ok {
					continue
				}
			}
			return pa.urlDone(ctx, q, early)
		case <-rr.Retry():
		case m, ok := <-sub.Messages():
			if !ok {
				// The subscription ended: subscribe again, then read.
				if err := s.Resubscribe(ctx, wctx, sub); err != nil {
					return nil, err
				}
			} else {
				s.TakeHandoff(m.Data) // the records lost, a page of another node
			}
		case <-wctx.Done():
			return nil, WaitErrAfter(ctx, rr)
		}
		// A message, or a read to try again: the store says.
		res, ok, err := readResponse(ctx, rr)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if q.Mode == ModeURL && replies != nil {
			early = res
			continue
		}
		if q.Mode == ModeURL {
			return pa.urlDone(ctx, q, res)
		}
		return res, nil
	}
}

// blockingForm is blocking for form mode, where only the client's reply
// answers: the only other news is that a newer elicitation in the session
// replaced this one, which comes in this process (Slot.OnSuperseded: the
// session lives here). The request is sent from the caller's goroutine,
// as a bare ServerSession.Elicit would be, and the replacing call cancels
// it.
func (pa blockingPath) blockingForm(ctx context.Context, q *Ask, s *Slot, params *ElicitParams) (*Response, error) {
	wctx, cancel := context.WithTimeout(ctx, q.TTL)
	defer cancel()
	rctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	s.OnSuperseded(func() { stop(errSuperseded) })

	res, err := q.peer.Elicit(rctx, params)
	switch {
	case err == nil:
		return fromReply(res)
	case context.Cause(rctx) == errSuperseded:
		return nil, ErrCancelled
	case wctx.Err() != nil:
		return nil, WaitErr(ctx)
	}
	return nil, clientError(err)
}

// errSuperseded is the cause a blocking form's request is cancelled with
// when a newer elicitation of the session replaced it.
var errSuperseded = errors.New("elicit: superseded by a newer elicitation")

// urlDone notifies the client that a URL-mode elicitation completed on
// the page: accepted or declined there, both end it. The answer is taken:
// the page that wrote it may say so.
func (pa blockingPath) urlDone(ctx context.Context, q *Ask, res *Response) (*Response, error) {
	pa.e.Slot(q.info.Who, q.ID, time.Time{}).Taken(ctx)
	notifyComplete(ctx, q.peer, q.ID)
	return res, nil
}

// clientError reports a failed elicitation/create. An error the client
// sent back is reduced to its code (a *ClientError): its message may
// quote the answer.
func clientError(err error) error {
	var ce *ClientError
	if errors.As(err, &ce) {
		return &ClientError{Code: ce.Code}
	}
	return fmt.Errorf("elicit: elicitation/create: %w", err)
}

// response is a result record as a Response.
func response(r *Result) *Response {
	if r == nil {
		return nil
	}
	return &Response{Action: r.Action, Content: r.Content, Handed: r.Handed}
}

// readResponse is ResultReader.Read, as a Response.
func readResponse(ctx context.Context, rr *ResultReader) (*Response, bool, error) {
	r, ok, err := rr.Read(ctx)
	return response(r), ok, err
}

// readResult is Slot.ReadResult, as a Response.
func readResult(ctx context.Context, s *Slot) (*Response, bool, error) {
	r, ok, err := s.ReadResult(ctx)
	return response(r), ok, err
}

// await is Slot.Await, as a Response. A held 2026-07-28 round whose
// requestState it has still to use up takes no answer handed to it after
// the store lost its records (Slot.NoHandedAnswer): the claim on the
// requestState is lost too, and the round could neither use the answer
// nor be sent again, so the page must not say "Done".
func await(ctx context.Context, expiry time.Time, s *Slot, sub *Subscription) (*Response, error) {
	if rd, ok := ctx.Value(roundKey{}).(*round); ok && rd.use != nil && !rd.delivered {
		s.NoHandedAnswer = true
	}
	r, err := s.Await(ctx, expiry, sub)
	return response(r), err
}

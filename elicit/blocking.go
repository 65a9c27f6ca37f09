package elicit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// blocking is the request flow of protocols before 2026-07-28: it sends
// elicitation/create and waits for the answer, the TTL, a newer
// elicitation in the session, or ctx. For URL mode the answer that counts
// is the one the callback writes to the store; the client's own reply only
// says whether the user agreed to open the URL.
func (pa *blockingPath) blocking(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	e := pa.e
	call := r.Call
	expiry := e.engine.Now().Add(ttl)
	s := e.engine.Slot(call.who, r.ID, expiry)
	s.Local = r.Mode == ModeForm // the client's reply is the answer
	rec := &pendingRecord{Mode: r.Mode, Tool: call.Tool, Expiry: expiry.UnixMilli()}
	params := &engine.ElicitParams{Mode: string(r.Mode), Message: r.Message}
	switch r.Mode {
	case ModeForm:
		raw, _ := r.Schema.MarshalJSON()
		rec.Schema = raw
		params.RequestedSchema = raw
	case ModeURL:
		link, err := e.issueURL(r, ttl, o)
		if err != nil {
			return nil, err
		}
		params.URL = link
		params.ElicitationID = r.ID
	}

	first, err := e.begin(ctx, s, rec)
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	if r.Mode == ModeForm {
		return e.block.blockingForm(ctx, r, s, params, ttl)
	}
	sub := &engine.Subscription{Subscription: first}
	defer func() { sub.Close() }()

	wctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()

	type reply struct {
		res *engine.Reply
		err error
	}
	replies := make(chan reply, 1)
	go func() {
		res, err := call.peer.Elicit(wctx, params)
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
	rr := resultReader{s.NewReader()}
	local, done := s.WaitLocal()
	defer done()
	for {
		select {
		case lr := <-local: // a page of this node, the store having lost the records
			if replies != nil {
				early = response(lr)
				continue
			}
			return e.block.urlDone(ctx, r, response(lr))
		case rp := <-replies:
			waitReply = false
			replies = nil
			if rp.err != nil {
				if wctx.Err() != nil {
					return nil, engine.WaitErr(ctx)
				}
				return nil, clientError(rp.err)
			}
			res, err := fromReply(rp.res)
			if err != nil || r.Mode == ModeForm {
				return res, err
			}
			if early == nil && res.Action != Accept {
				return res, nil
			}
			// URL mode: the user went to the page; the callback decides.
			if early == nil {
				var ok bool
				if early, ok, err = rr.read(ctx); err != nil {
					return nil, err
				} else if !ok {
					continue
				}
			}
			return e.block.urlDone(ctx, r, early)
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
			return nil, engine.WaitErrAfter(ctx, rr.ResultReader)
		}
		// A message, or a read to try again: the store says.
		res, ok, err := rr.read(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if r.Mode == ModeURL && replies != nil {
			early = res
			continue
		}
		if r.Mode == ModeURL {
			return e.block.urlDone(ctx, r, res)
		}
		return res, nil
	}
}

// blockingForm is blocking for form mode, where only the client's reply
// answers: the only other news is that a newer elicitation in the session
// replaced this one, which comes in this process (engine.Slot.Superseded:
// the session lives here). The request is sent from the caller's
// goroutine, as a bare ServerSession.Elicit would be, and a watcher
// cancels it when that news comes.
func (pa *blockingPath) blockingForm(ctx context.Context, r *Request, s *engine.Slot, params *engine.ElicitParams, ttl time.Duration) (*Response, error) {
	wctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	rctx, stop := context.WithCancel(wctx)
	defer stop()

	type result struct {
		res *Response
		err error
	}
	news := make(chan result, 1)
	go func() {
		select {
		case <-s.Superseded():
			news <- result{err: ErrReplaced}
			stop()
		case <-rctx.Done():
		}
	}()

	res, err := r.Call.peer.Elicit(rctx, params)
	if err == nil {
		return fromReply(res)
	}
	select {
	case n := <-news:
		return n.res, n.err
	default:
	}
	if wctx.Err() != nil {
		return nil, engine.WaitErr(ctx)
	}
	return nil, clientError(err)
}

// urlDone notifies the client that a URL-mode elicitation completed on
// the page: accepted or declined there, both end it. The answer is taken:
// the page that wrote it may say so.
func (pa *blockingPath) urlDone(ctx context.Context, r *Request, res *Response) (*Response, error) {
	e := pa.e
	e.engine.Slot(r.Call.who, r.ID, time.Time{}).Taken(ctx)
	notifyComplete(ctx, r.Call.peer, r.ID)
	return res, nil
}

// clientError reports a failed elicitation/create. An error the client
// sent back is reduced to its code: its message may quote the answer.
func clientError(err error) error {
	var ce *engine.ClientError
	if errors.As(err, &ce) {
		return &clientCodeError{Code: ce.Code}
	}
	return fmt.Errorf("elicit: elicitation/create: %w", err)
}

// blockingPath is the blocking request of protocols before 2026-07-28:
// elicitation/create, and the wait for its answer.
type blockingPath struct{ e *Elicitor }

func (pa *blockingPath) deliver(ctx context.Context, _ *round, r *Request, ttl time.Duration, o *options) (*Response, error) {
	return pa.blocking(ctx, r, ttl, o)
}

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
func (e *Elicitor) blocking(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	call := r.Call
	expiry := e.now().Add(ttl)
	s := e.slot(call.who, r.ID, expiry)
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
		return e.blockingForm(ctx, r, s, params, ttl)
	}
	sub := &subscription{first}
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
	rr := &resultReader{e: e, s: s}
	local, done := e.waiting.wait(s)
	defer done()
	for {
		select {
		case res := <-local: // a page of this node, the store having lost the records
			if replies != nil {
				early = res
				continue
			}
			return e.urlDone(ctx, r, res)
		case rp := <-replies:
			waitReply = false
			replies = nil
			if rp.err != nil {
				if wctx.Err() != nil {
					return nil, e.waitErr(ctx)
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
			return e.urlDone(ctx, r, early)
		case <-rr.retry:
		case m, ok := <-sub.Messages():
			if !ok {
				// The subscription ended: subscribe again, then read.
				if err := e.resubscribe(ctx, wctx, s, sub); err != nil {
					return nil, err
				}
			} else {
				e.takeHandoff(ctx, s, m.Data) // the records lost, a page of another node
			}
		case <-wctx.Done():
			return nil, e.waitErrAfter(ctx, rr)
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
			return e.urlDone(ctx, r, res)
		}
		return res, nil
	}
}

// waitErrAfter is waitErr, except that a wait that ended while the store
// did not answer reports the store's error: the answer may be there.
func (e *Elicitor) waitErrAfter(ctx context.Context, rr *resultReader) error {
	if ctx.Err() == nil && rr.retry != nil && rr.lastErr != nil {
		return rr.lastErr
	}
	return e.waitErr(ctx)
}

// blockingForm is blocking for form mode, where only the client's reply
// answers: the only other news is that a newer elicitation in the session
// replaced this one, which comes in this process (engine.Slot.Superseded:
// the session lives here). The request is sent from the caller's
// goroutine, as a bare ServerSession.Elicit would be, and a watcher
// cancels it when that news comes.
func (e *Elicitor) blockingForm(ctx context.Context, r *Request, s *engine.Slot, params *engine.ElicitParams, ttl time.Duration) (*Response, error) {
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
			news <- result{err: ErrCancelled}
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
		return nil, e.waitErr(ctx)
	}
	return nil, clientError(err)
}

// urlDone notifies the client that a URL-mode elicitation completed on
// the page: accepted or declined there, both end it.
func (e *Elicitor) urlDone(ctx context.Context, r *Request, res *Response) (*Response, error) {
	notifyComplete(ctx, r.Call.peer, r.ID)
	return res, nil
}

// clientError reports a failed elicitation/create. An error the client
// sent back is reduced to its code: its message may quote the answer.
func clientError(err error) error {
	var ce *engine.ClientError
	if errors.As(err, &ce) {
		return &ClientError{Code: ce.Code}
	}
	return fmt.Errorf("elicit: elicitation/create: %w", err)
}

// waitErr is the error of a wait that ended without an answer: ctx's own
// error, or ErrTimeout.
func (e *Elicitor) waitErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrClosed):
			return ErrClosed
		case errors.Is(cause, ErrSessionEnded):
			return cause // ErrSessionEnded or ErrSessionEvicted
		case errors.Is(err, context.Canceled):
			return ErrClientCancelled
		}
		return err
	}
	return ErrTimeout
}

// readResult reads the elicitation's result from the store, if one is
// there. ok reports whether the wait is over. It leaves the result in
// place (the slot's end removes it): a read whose reply is lost, or a
// waiter that dies before the answer reaches the tool, must not have
// consumed it (issue 26).
func (e *Elicitor) readResult(ctx context.Context, s *engine.Slot) (res *Response, ok bool, err error) {
	var rr resultRecord
	err = s.Get(ctx, engine.PurposeResult, &rr)
	if errors.Is(err, ErrUnknownElicitation) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return fromResultRecord(&rr)
}

func fromResultRecord(rr *resultRecord) (*Response, bool, error) {
	if rr.Superseded {
		return nil, true, ErrCancelled
	}
	return &Response{Action: rr.Action, Content: rr.Content}, true, nil
}

// pollFirst and pollMax bound how long a waiter goes without reading the
// store. An answer is written before it is announced, and an announcement
// can fail to come although the answer is there: the node that wrote it
// died before it published, or the backend dropped the message without
// ending the subscription. The waiter then finds the answer by its next
// read, within seconds, instead of at the expiry. The interval doubles
// while nothing comes, so a long wait for a person costs one read every
// pollMax.
const (
	pollFirst = time.Second
	pollMax   = 8 * time.Second
)

// resultReader reads a waiting elicitation's result. It rides out a store
// that does not answer (a failover, a restart, a partition): the answer,
// once written, is safe in the store, so a failed read is tried again,
// with a growing delay, until the wait ends, instead of failing the call.
// And it reads again on its own after a read that found nothing (see
// pollFirst). retry is the channel to wait on for the next read; nil when
// none is due.
type resultReader struct {
	e       *Elicitor
	s       *engine.Slot
	delay   time.Duration // the delay before the retry of a failed read
	poll    time.Duration // the delay before the next read after an empty one
	retry   <-chan time.Time
	lastErr error // the error of the last read, if it failed
}

// read is readResult, except that a store error schedules a retry and
// reads as "no result yet", and a read that finds nothing schedules the
// next one.
func (r *resultReader) read(ctx context.Context) (*Response, bool, error) {
	res, ok, err := r.e.readResult(ctx, r.s)
	var se *engine.StoreError
	switch {
	case err != nil && errors.As(err, &se) && ctx.Err() == nil:
		r.lastErr = err
		r.delay = min(max(2*r.delay, 50*time.Millisecond), time.Second)
		r.retry = time.After(r.delay)
	case ok || err != nil || ctx.Err() != nil:
		r.retry = nil
		return res, ok, err
	default:
		r.lastErr, r.delay = nil, 0
		r.poll = min(max(2*r.poll, pollFirst), pollMax)
		r.retry = time.After(r.poll)
	}
	return nil, false, nil
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// The errors a wait ends with (package elicit exports them).
var (
	ErrTimeout = errors.New("elicit: no answer within the time limit; call the tool again when the user is ready to answer")

	ErrClientCancelled error = &alsoError{"elicit: the client cancelled the tool call while the user was being asked (a client request timeout?); call the tool again", context.Canceled}

	ErrCancelled = errors.New("elicit: cancelled: another tool call in the same session asked the user something, and a session has one question open at a time; call this tool again once that one is answered")

	ErrSessionEnded = errors.New("elicit: the session ended while the tool waited for an answer")
)

// alsoError is a sentinel that also matches another.
type alsoError struct {
	msg  string
	also error
}

func (e *alsoError) Error() string        { return e.msg }
func (e *alsoError) Is(target error) bool { return target == e.also }

// Result is an elicitation's result record, as its resolver wrote it:
// the answer (validated content), or the news that a newer elicitation
// replaced this one.
type Result struct {
	Action     string         `json:"action,omitempty"`
	Content    map[string]any `json:"content,omitempty"`
	Superseded bool           `json:"superseded,omitempty"`
	// ID and Expiry, in the answer a page leaves for the retry of a
	// -32042 call, name the elicitation it answers, whose one-shot marker
	// the retry claims, and when it ends (Unix ms).
	ID     string `json:"id,omitempty"`
	Expiry int64  `json:"exp,omitempty"`

	// Handed marks an answer that reached the waiting call without the
	// store, which had lost its records (Handoff, TakeHandoff):
	// nothing else of it is stored. Never stored itself.
	Handed bool `json:"-"`
}

// WaitErr is the error of a wait that ended without an answer: ctx's own
// (ErrClosed, ErrSessionEnded or an error matching it, ErrClientCancelled
// for a call the client cancelled), or ErrTimeout.
func WaitErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrClosed):
			return ErrClosed
		case errors.Is(cause, ErrSessionEnded):
			return cause // ErrSessionEnded or one that matches it
		case errors.Is(err, context.Canceled):
			return ErrClientCancelled
		}
		return err
	}
	return ErrTimeout
}

// WaitErrAfter is WaitErr, except that a wait that ended while the store
// did not answer reports the store's error: the answer may be there.
func WaitErrAfter(ctx context.Context, rr *ResultReader) error {
	if ctx.Err() == nil && rr.retry != nil && rr.lastErr != nil {
		return rr.lastErr
	}
	return WaitErr(ctx)
}

// ReadResult reads the slot's result from the store, if one is there. ok
// reports whether the wait is over (ErrCancelled for a superseded one).
// It leaves the result in place (End removes it): a read whose reply is
// lost, or a waiter that dies before the answer reaches the tool, must
// not have consumed it (issue 26).
func (s *Slot) ReadResult(ctx context.Context) (res *Result, ok bool, err error) {
	var rr Result
	err = s.Get(ctx, PurposeResult, &rr)
	if errors.Is(err, ErrUnknownElicitation) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if rr.Superseded {
		return nil, true, ErrCancelled
	}
	return &rr, true, nil
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

// ResultReader reads a waiting elicitation's result. It rides out a store
// that does not answer (a failover, a restart, a partition): the answer,
// once written, is safe in the store, so a failed read is tried again,
// with a growing delay, until the wait ends, instead of failing the call.
// And it reads again on its own after a read that found nothing (see
// pollFirst). Retry is the channel to wait on for the next read; nil when
// none is due.
type ResultReader struct {
	s       *Slot
	delay   time.Duration // the delay before the retry of a failed read
	poll    time.Duration // the delay before the next read after an empty one
	retry   <-chan time.Time
	lastErr error // the error of the last read, if it failed
}

// NewReader returns a ResultReader of s's result.
func (s *Slot) NewReader() *ResultReader { return &ResultReader{s: s} }

// Retry is the channel of the next read that is due, or nil.
func (r *ResultReader) Retry() <-chan time.Time { return r.retry }

// Read is ReadResult, except that a store error schedules a retry and
// reads as "no result yet", and a read that finds nothing schedules the
// next one.
func (r *ResultReader) Read(ctx context.Context) (*Result, bool, error) {
	res, ok, err := r.s.ReadResult(ctx)
	var se *StoreError
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

// Subscription holds the current subscription of a waiter, which changes
// when it has to subscribe again.
type Subscription struct {
	store.Subscription
}

// Resubscribe replaces sub's ended subscription with a new one to the
// slot's channel; the caller reads the store after it, as after every
// message. When the wait (wctx) ends meanwhile, it returns the wait's own
// error (WaitErr of ctx).
func (s *Slot) Resubscribe(ctx, wctx context.Context, sub *Subscription) error {
	sub.Close()
	ns, err := s.e.store.Subscribe(wctx, s.Channel())
	if err != nil {
		if wctx.Err() != nil {
			return WaitErr(ctx)
		}
		return fmt.Errorf("elicit: subscribe: %w", err)
	}
	sub.Subscription = ns
	return nil
}

// Await waits for the slot's result until expiry, reading the store
// first, then after every message and every resubscription; a page of
// this node may hand it the answer directly (WaitLocal). It ends with
// ErrTimeout at expiry, or ctx's error (WaitErr).
func (s *Slot) Await(ctx context.Context, expiry time.Time, sub *Subscription) (*Result, error) {
	wctx, cancel := context.WithDeadline(ctx, expiry)
	defer cancel()
	local, done := s.WaitLocal()
	defer done()
	rr := s.NewReader()
	for {
		if res, ok, err := rr.Read(ctx); ok || err != nil {
			return res, err
		}
		select {
		case res := <-local: // a page of this node, the store having lost the records
			return res, nil
		case <-rr.retry:
			continue
		case m, ok := <-sub.Messages():
			if ok {
				s.TakeHandoff(m.Data) // the records lost, a page of another node
				continue
			}
			if err := s.Resubscribe(ctx, wctx, sub); err != nil {
				return nil, err
			}
		case <-wctx.Done():
			return nil, WaitErrAfter(ctx, rr)
		}
	}
}

// waiters are the elicitations this node's calls are waiting for, by
// binding and elicitation ID: a URL-mode page on this node can hand such a
// call its answer without the store, when the store lost the call's
// records (issue 24: a store that forgets). The waiter takes one answer and
// is gone, which makes that delivery one-shot by itself.
type waiters struct {
	mu sync.Mutex
	m  map[waiterKey]chan *Result
}

type waiterKey struct {
	who Identity
	id  string
}

// WaitLocal registers the call waiting for s's answer on this node; done
// unregisters it. A slot marked NoHandedAnswer registers nothing.
func (s *Slot) WaitLocal() (answer <-chan *Result, done func()) {
	if s.NoHandedAnswer {
		return nil, func() {}
	}
	w := &s.e.waiting
	k := waiterKey{s.Who, s.ID}
	ch := make(chan *Result, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[waiterKey]chan *Result)
	}
	w.m[k] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		if w.m[k] == ch {
			delete(w.m, k)
		}
		w.mu.Unlock()
	}
}

// deliver hands action to the call waiting for the elicitation id of who,
// and reports whether one was.
func (w *waiters) deliver(who Identity, id, action string) bool {
	k := waiterKey{who, id}
	w.mu.Lock()
	ch, ok := w.m[k]
	if ok {
		delete(w.m, k)
	}
	w.mu.Unlock()
	if !ok {
		return false
	}
	ch <- &Result{Action: action, Handed: true} // buffered, and this is its only send
	return true
}

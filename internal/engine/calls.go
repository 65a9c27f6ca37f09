package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is the cause of the end of a tool call that was in progress
// when the engine was closed (the server is shutting down), and the error
// of calls that begin after.
var ErrClosed = errors.New("elicit: the server is shutting down; call the tool again later")

// calls are the tool calls in progress, which Close ends.
type calls struct {
	mu     sync.Mutex
	closed bool
	m      map[*callCancel]struct{}
	active sync.WaitGroup
}

// callCancel ends one tool call in progress.
type callCancel struct {
	cancel context.CancelCauseFunc
	who    Identity
	cs     *calls
	ended  atomic.Bool
}

// Track registers a tool call of who in progress, so that Close and
// EndCalls can end it. The returned context is cancelled with their
// cause; done must be called when the call returns. After Close it is
// ErrClosed.
func (e *Engine) Track(ctx context.Context, who Identity) (_ context.Context, done func(), err error) {
	cs := &e.calls
	c := &callCancel{who: who, cs: cs}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, nil, ErrClosed
	}
	if cs.m == nil {
		cs.m = map[*callCancel]struct{}{}
	}
	ctx, c.cancel = context.WithCancelCause(ctx)
	cs.m[c] = struct{}{}
	cs.active.Add(1)
	return ctx, c.end, nil
}

// end is Track's done: the first call forgets the call and cancels its
// context; later calls do nothing.
func (c *callCancel) end() {
	if c.ended.Swap(true) {
		return
	}
	c.cs.mu.Lock()
	delete(c.cs.m, c)
	c.cs.mu.Unlock()
	c.cancel(nil)
	c.cs.active.Done()
}

// Close ends every tool call in progress with ErrClosed and waits until
// they have returned. Calls that begin after fail with ErrClosed.
func (e *Engine) Close() {
	cs := &e.calls
	cs.mu.Lock()
	cs.closed = true
	for c := range cs.m {
		c.cancel(ErrClosed)
	}
	cs.mu.Unlock()
	cs.active.Wait()
}

// EndCalls ends the tool calls in progress of who with cause.
func (e *Engine) EndCalls(who Identity, cause error) {
	cs := &e.calls
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for c := range cs.m {
		if c.who == who {
			c.cancel(cause)
		}
	}
}

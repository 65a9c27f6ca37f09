package elicit

import (
	"sync"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/token"
)

// waiters are the elicitations this node's calls are waiting for, by
// binding and elicitation ID: a URL-mode page on this node can hand such a
// call its answer without the store, when the store lost the call's
// records (issue 24: a store that forgets). The waiter takes one answer and
// is gone, which makes that delivery one-shot by itself.
type waiters struct {
	mu sync.Mutex
	m  map[waiterKey]chan *Response
}

type waiterKey struct {
	who engine.Identity
	id  string
}

// wait registers the call waiting for s's answer; done unregisters it.
func (w *waiters) wait(s *engine.Slot) (answer <-chan *Response, done func()) {
	k := waiterKey{s.Who, s.ID}
	ch := make(chan *Response, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[waiterKey]chan *Response)
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

// deliver hands action to the call waiting on this node for the
// elicitation of verified claims c, and reports whether one was.
func (w *waiters) deliver(c *token.Claims, action Action) bool {
	return w.deliverTo(engine.ClaimsIdentity(c), c.ElicitationID, action)
}

// deliverTo hands action to the call of who waiting on this node for
// elicitation id, and reports whether one was.
func (w *waiters) deliverTo(who engine.Identity, id string, action Action) bool {
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
	ch <- &Response{Action: action, handed: true} // buffered, and this is its only send
	return true
}

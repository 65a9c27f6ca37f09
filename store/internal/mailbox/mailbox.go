// Package mailbox delivers the messages of one subscription without ever
// blocking the sender, for the store backends.
//
// A Box buffers Size data messages plus one slot that only a notice may
// take. When a data message does not fit it is dropped and a Resubscribed
// notice takes its place, so the subscriber learns that it must read the
// store again; a notice is not repeated while the last one sent is still
// buffered. The caller serialises Deliver and Close (every backend calls
// them under its own lock), so the sends never block.
package mailbox

import (
	"bytes"

	"github.com/elicitvault/elicitvault/store"
)

// Size is the number of data messages a Box buffers.
const Size = 64

// Box is one subscription's channel of messages. The zero value is not
// usable; create one with New.
type Box struct {
	ch      chan store.Message
	noticed bool // a notice is the last message sent on ch
	closed  bool
}

// New returns an empty, open Box.
func New() *Box { return &Box{ch: make(chan store.Message, Size+1)} }

// C returns the channel the subscriber receives from. It is closed by Close.
func (b *Box) C() <-chan store.Message { return b.ch }

// Deliver sends m without blocking, dropping a data message that does not
// fit in favour of a Resubscribed notice. The data is copied. Deliver after
// Close does nothing.
func (b *Box) Deliver(m store.Message) {
	if b.closed {
		return
	}
	if !m.Resubscribed && len(b.ch) < cap(b.ch)-1 {
		b.ch <- store.Message{Data: bytes.Clone(m.Data)}
		b.noticed = false
		return
	}
	if b.noticed && len(b.ch) > 0 {
		return // the last message sent is a notice not yet received
	}
	if len(b.ch) < cap(b.ch) {
		b.ch <- store.Message{Resubscribed: true}
		b.noticed = true
	}
}

// Close closes the channel and reports whether this call closed it: the
// first call does, later ones do nothing.
func (b *Box) Close() bool {
	if b.closed {
		return false
	}
	b.closed = true
	close(b.ch)
	return true
}

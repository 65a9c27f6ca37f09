package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A Driver is the raw operations of one backend, as gocloud.dev's drivers
// are: [New] wraps it in the [Store] that callers use, which does what
// every backend must do alike, so that a Driver does not.
//
// That Store calls a Driver only with checked arguments (see
// [ErrInvalidArgument]), only while it is open and with a ctx that is not
// done yet, and calls Close once. A Driver returns [ErrNotFound] for an
// absent or expired key, its own errors unwrapped (the Store prefixes
// them with the backend's name and the operation's), and
// [ErrInvalidArgument] for what only it can check (a malformed Scan cursor,
// a message too large).
type Driver interface {
	Put(ctx context.Context, key string, value []byte, expiry time.Time) error
	Get(ctx context.Context, key string) ([]byte, error)
	Take(ctx context.Context, key string) ([]byte, error)
	PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error)
	// PutIfAbsentGet is PutIfAbsent of key, then Get of other, in one
	// round trip (the Store New returns has the method too, beside the
	// Store interface's). An absent other reads as a nil value, not
	// ErrNotFound. A Driver that cannot do both in one round trip returns
	// errors.ErrUnsupported, and the Store calls PutIfAbsent, then Get.
	PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error)
	Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error)
	// CompareAndSwap deletes the entry when value is nil.
	CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error)
	Delete(ctx context.Context, key string) error
	Scan(ctx context.Context, cursor string, count int) ([]Entry, string, error)
	Publish(ctx context.Context, channel string, msg []byte) error

	// Subscribe starts calling deliver with the messages of channel, and
	// returns once the subscription is active. deliver never blocks and
	// may be called from any goroutine; after unsubscribe returns it is
	// not called again, and unsubscribe is called at most once. The Store
	// hands every message to all the subscriptions of a channel, so it
	// subscribes a channel once: it calls Subscribe for a channel again
	// only after the previous Subscribe of it failed or its unsubscribe
	// returned.
	Subscribe(ctx context.Context, channel string, deliver func(Message)) (unsubscribe func(), err error)

	// Close releases the driver's resources; no deliver runs after it.
	Close() error
}

// portable is the [Store] every backend returns: it checks arguments,
// refuses every operation after Close with [ErrClosed], prefixes errors with the
// backend's name and the operation's, and gives each subscription its own
// buffer, so that a Driver implements only its raw operations.
type portable struct {
	name string
	d    Driver
	now  func() time.Time

	closed atomic.Bool
	mu     sync.Mutex
	chans  map[string]*channel // the subscribed channels, by name; nil once closed
}

var _ Store = (*portable)(nil)

// New returns the Store over d, the one every backend returns: it checks
// arguments ([ErrInvalidArgument]), refuses every operation after Close
// with [ErrClosed], prefixes errors with the backend's name and the
// operation's, and gives each subscription its own buffer, so that a
// Driver implements only its raw operations. name prefixes its errors
// ("redis", "postgres"); now, when not nil, replaces time.Now for the
// check that an expiry is not past.
func New(name string, d Driver, now func() time.Time) Store {
	if now == nil {
		now = time.Now
	}
	return &portable{name: name, d: d, now: now, chans: make(map[string]*channel)}
}

// begin checks that p is open and ctx is not done.
func (p *portable) begin(ctx context.Context, op string) error {
	if p.closed.Load() {
		return p.wrap(op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return p.wrap(op, err)
	}
	return nil
}

func (p *portable) wrap(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", p.name, op, err)
}

// fail wraps an error of the driver. ErrNotFound stays bare; an error of an
// operation that Close overtook also matches ErrClosed.
func (p *portable) fail(op string, err error) error {
	switch {
	case err == nil || err == ErrNotFound:
		return err
	case p.closed.Load() && !errors.Is(err, ErrClosed):
		return p.wrap(op, errors.Join(ErrClosed, err))
	}
	return p.wrap(op, err)
}

// beginKey is begin, then checkKey: the checks of an operation on one key.
func (p *portable) beginKey(ctx context.Context, op, key string) error {
	if err := p.begin(ctx, op); err != nil {
		return err
	}
	return p.checkKey(op, key)
}

func (p *portable) checkKey(op, key string) error {
	if key == "" {
		return p.wrap(op, fmt.Errorf("empty key: %w", ErrInvalidArgument))
	}
	return nil
}

// beginWrite is begin, then checkWrite: the checks of a write.
func (p *portable) beginWrite(ctx context.Context, op, key string, value []byte, expiry time.Time) error {
	err := p.begin(ctx, op)
	if err == nil {
		err = p.checkWrite(op, key, value, expiry)
	}
	return err
}

func (p *portable) checkWrite(op, key string, value []byte, expiry time.Time) error {
	if err := checkWriteArgs(key, value, expiry, p.now()); err != nil {
		return p.wrap(op, err)
	}
	return nil
}

// Put implements Store.
func (p *portable) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	const op = "put"
	if err := p.beginWrite(ctx, op, key, value, expiry); err != nil {
		return err
	}
	return p.fail(op, p.d.Put(ctx, key, value, expiry))
}

// Get implements Store.
func (p *portable) Get(ctx context.Context, key string) ([]byte, error) {
	const op = "get"
	if err := p.beginKey(ctx, op, key); err != nil {
		return nil, err
	}
	v, err := p.d.Get(ctx, key)
	return v, p.fail(op, err)
}

// Take implements Store.
func (p *portable) Take(ctx context.Context, key string) ([]byte, error) {
	const op = "take"
	if err := p.beginKey(ctx, op, key); err != nil {
		return nil, err
	}
	v, err := p.d.Take(ctx, key)
	return v, p.fail(op, err)
}

// PutIfAbsent implements Store.
func (p *portable) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	const op = "put if absent"
	if err := p.beginWrite(ctx, op, key, value, expiry); err != nil {
		return false, err
	}
	ok, err := p.d.PutIfAbsent(ctx, key, value, expiry)
	return ok, p.fail(op, err)
}

// PutIfAbsentGet writes value under key only if no live entry exists, as
// PutIfAbsent does, and then reads the entry under other, as Get does: it
// reports whether it wrote, and returns other's value, or nil when other
// has no live entry. The read comes after the write: it sees every write
// the store had applied when PutIfAbsentGet decided whether to write
// (other = key returns value when it wrote). PostgreSQL and Redis (not
// Redis Cluster, where the two keys are in different slots) do both in
// one round trip. An error leaves it unknown whether value was written, as
// for PutIfAbsent.
//
// It is not a method of [Store], so that a Store wrapper that changes
// PutIfAbsent or Get is not bypassed: a caller holding a Store asserts
// for it, and without it calls PutIfAbsent, then Get.
func (p *portable) PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error) {
	const op = "put if absent and get"
	if err := p.beginWrite(ctx, op, key, value, expiry); err != nil {
		return false, nil, err
	}
	if err := p.checkKey(op, other); err != nil {
		return false, nil, err
	}
	ok, v, err := p.d.PutIfAbsentGet(ctx, key, value, expiry, other)
	if errors.Is(err, errors.ErrUnsupported) {
		ok, err = p.d.PutIfAbsent(ctx, key, value, expiry)
		if err == nil {
			if v, err = p.d.Get(ctx, other); err == ErrNotFound {
				v, err = nil, nil
			}
		}
	}
	if err != nil {
		return false, nil, p.fail(op, err)
	}
	return ok, v, nil
}

// Swap implements Store.
func (p *portable) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	const op = "swap"
	if err := p.beginWrite(ctx, op, key, value, expiry); err != nil {
		return nil, err
	}
	old, err := p.d.Swap(ctx, key, value, expiry)
	return old, p.fail(op, err)
}

// CompareAndSwap implements Store. It returns ErrInvalidArgument for a nil
// old.
func (p *portable) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	const op = "compare and swap"
	if err := p.beginKey(ctx, op, key); err != nil {
		return false, err
	}
	if old == nil {
		return false, p.wrap(op, fmt.Errorf("nil old value: %w", ErrInvalidArgument))
	}
	if value != nil {
		if err := p.checkWrite(op, key, value, expiry); err != nil {
			return false, err
		}
	}
	ok, err := p.d.CompareAndSwap(ctx, key, old, value, expiry)
	return ok, p.fail(op, err)
}

// Delete implements Store.
func (p *portable) Delete(ctx context.Context, key string) error {
	const op = "delete"
	if err := p.beginKey(ctx, op, key); err != nil {
		return err
	}
	return p.fail(op, p.d.Delete(ctx, key))
}

// Scan implements Store. It returns ErrInvalidArgument for a count below 1
// or a cursor that no Scan of this backend returned.
func (p *portable) Scan(ctx context.Context, cursor string, count int) ([]Entry, string, error) {
	const op = "scan"
	if err := p.begin(ctx, op); err != nil {
		return nil, "", err
	}
	if count < 1 {
		return nil, "", p.wrap(op, fmt.Errorf("count below 1: %w", ErrInvalidArgument))
	}
	entries, next, err := p.d.Scan(ctx, cursor, count)
	if err != nil {
		return nil, "", p.fail(op, err)
	}
	return entries, next, nil
}

// Publish implements Store. It returns ErrInvalidArgument for an empty
// channel or a nil msg.
func (p *portable) Publish(ctx context.Context, channel string, msg []byte) error {
	const op = "publish"
	if err := p.begin(ctx, op); err != nil {
		return err
	}
	if channel == "" || msg == nil {
		return p.wrap(op, fmt.Errorf("empty channel or nil message: %w", ErrInvalidArgument))
	}
	return p.fail(op, p.d.Publish(ctx, channel, msg))
}

// Subscribe implements Store. A subscription buffers 64 messages; when its
// buffer is full, a message is dropped and the subscription receives
// instead, after the messages it buffered, a message with Resubscribed set,
// telling it to read the store again. It returns ErrInvalidArgument for an
// empty channel.
//
// The driver is subscribed once per channel, by the channel's first
// subscription, and hands each message to all of them: a later
// subscription of the channel returns once that first one is active.
func (p *portable) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	const op = "subscribe"
	if err := p.begin(ctx, op); err != nil {
		return nil, err
	}
	if channel == "" {
		return nil, p.wrap(op, fmt.Errorf("empty channel: %w", ErrInvalidArgument))
	}
	for {
		sub := &subscription{p: p, box: newMailbox()}
		first, err := p.join(ctx, channel, sub)
		if err != nil {
			return nil, p.wrap(op, err)
		}
		c := sub.c
		if first {
			unsubscribe, err := p.d.Subscribe(ctx, channel, c.deliver)
			p.settle(c, unsubscribe, err)
		} else {
			select {
			case <-c.ready:
			case <-ctx.Done():
				sub.Close()
				return nil, p.wrap(op, ctx.Err())
			}
		}
		if c.err != nil {
			sub.Close()
			if first {
				return nil, p.fail(op, c.err)
			}
			continue // subscribe the channel anew, under this ctx
		}
		sub.mu.Lock()
		ended := sub.box.closed // Close of the store overtook the driver
		sub.mu.Unlock()
		if ended {
			return nil, p.wrap(op, ErrClosed)
		}
		return sub, nil
	}
}

// join adds sub to the channel named name, and reports whether the
// caller must subscribe the driver to it: when it is new. It waits while
// the driver unsubscribes the channel.
func (p *portable) join(ctx context.Context, name string, sub *subscription) (first bool, err error) {
	for {
		p.mu.Lock()
		if p.chans == nil {
			p.mu.Unlock()
			return false, ErrClosed
		}
		c := p.chans[name]
		if c == nil {
			c = &channel{name: name, subs: make(map[*subscription]struct{}), ready: make(chan struct{}), gone: make(chan struct{})}
			p.chans[name] = c
			first = true
		}
		if !c.leaving {
			c.mu.Lock()
			c.subs[sub] = struct{}{}
			c.mu.Unlock()
			sub.c = c
			p.mu.Unlock()
			return first, nil
		}
		p.mu.Unlock()
		select {
		case <-c.gone:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// settle records the outcome of the driver's Subscribe of c. A channel
// that failed is forgotten, so that its next subscription subscribes
// again; one that Close overtook is unsubscribed.
func (p *portable) settle(c *channel, unsubscribe func(), err error) {
	p.mu.Lock()
	c.err, c.unsubscribe = err, unsubscribe
	if err != nil && p.chans[c.name] == c {
		delete(p.chans, c.name)
	}
	closed := p.chans == nil
	close(c.ready)
	p.mu.Unlock()
	if err == nil && closed {
		unsubscribe()
	}
}

// leave removes sub from its channel, and unsubscribes the driver from
// the channel when sub was its last subscription.
func (p *portable) leave(sub *subscription) {
	c := sub.c
	p.mu.Lock()
	c.mu.Lock()
	delete(c.subs, sub)
	empty := len(c.subs) == 0
	c.mu.Unlock()
	select {
	case <-c.ready:
	default:
		empty = false // its first subscription is still subscribing
	}
	if !empty || c.err != nil || c.leaving || p.chans[c.name] != c {
		p.mu.Unlock()
		return
	}
	c.leaving = true
	p.mu.Unlock()
	c.unsubscribe()
	p.mu.Lock()
	if p.chans[c.name] == c {
		delete(p.chans, c.name)
	}
	p.mu.Unlock()
	close(c.gone)
}

// Close implements Store: it closes the driver, then ends every
// subscription. A second Close returns ErrClosed.
func (p *portable) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	err := p.d.Close()
	p.mu.Lock()
	chans := p.chans
	p.chans = nil
	p.mu.Unlock()
	for _, c := range chans {
		c.mu.Lock()
		for sub := range c.subs {
			sub.mu.Lock()
			sub.box.close()
			sub.mu.Unlock()
		}
		c.mu.Unlock()
	}
	if err != nil {
		return p.wrap("close", err)
	}
	return nil
}

// channel is the subscriptions of one channel, which share the driver's
// subscription of it.
type channel struct {
	name string
	mu   sync.Mutex // guards subs; held while delivering
	subs map[*subscription]struct{}

	// ready is closed once the driver's Subscribe returned, with err or
	// unsubscribe; leaving is set (under the portable's lock) while the
	// driver unsubscribes, and gone closed once it has.
	ready       chan struct{}
	err         error
	unsubscribe func()
	leaving     bool
	gone        chan struct{}
}

// deliver hands m to every subscription of c: the driver's deliver.
func (c *channel) deliver(m Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for sub := range c.subs {
		sub.deliver(m)
	}
}

// subscription implements Subscription: one subscriber of a channel.
type subscription struct {
	p   *portable
	c   *channel
	mu  sync.Mutex // serialises deliver and close of box
	box *mailbox
}

func (sub *subscription) deliver(m Message) {
	sub.mu.Lock()
	sub.box.deliver(m)
	sub.mu.Unlock()
}

// Messages implements Subscription.
func (sub *subscription) Messages() <-chan Message { return sub.box.ch }

// Err implements Subscription. Every backend recovers its subscriptions
// for as long as the store is open, so Err always returns nil.
func (sub *subscription) Err() error { return nil }

// Close implements Subscription.
func (sub *subscription) Close() error {
	sub.mu.Lock()
	first := sub.box.close()
	sub.mu.Unlock()
	if first {
		sub.p.leave(sub)
	}
	return nil
}

// mailboxSize is the number of data messages a subscription buffers.
const mailboxSize = 64

// mailbox is one subscription's channel of messages. It buffers
// mailboxSize data messages plus one slot that only a notice may take.
// When a data message does not fit it is dropped and a Resubscribed notice
// takes its place, so the subscriber learns that it must read the store
// again; a notice is not repeated while the last one sent is still
// buffered. The caller serialises deliver and close, so sends never block.
type mailbox struct {
	ch      chan Message
	noticed bool // a notice is the last message sent on ch
	closed  bool
}

func newMailbox() *mailbox { return &mailbox{ch: make(chan Message, mailboxSize+1)} }

// deliver sends m without blocking, dropping a data message that does not
// fit in favour of a Resubscribed notice. The data is copied. deliver after
// close does nothing.
func (b *mailbox) deliver(m Message) {
	if b.closed {
		return
	}
	if !m.Resubscribed && len(b.ch) < cap(b.ch)-1 {
		b.ch <- Message{Data: bytes.Clone(m.Data)}
		b.noticed = false
		return
	}
	if b.noticed && len(b.ch) > 0 {
		return // the last message sent is a notice not yet received
	}
	if len(b.ch) < cap(b.ch) {
		b.ch <- Message{Resubscribed: true}
		b.noticed = true
	}
}

// close closes the channel and reports whether this call closed it.
func (b *mailbox) close() bool {
	if b.closed {
		return false
	}
	b.closed = true
	close(b.ch)
	return true
}

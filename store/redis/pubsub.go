package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/internal/mailbox"
	"github.com/redis/go-redis/v9"
)

// Publish implements store.Store: PUBLISH <prefix>{<channel>} msg. It returns
// ErrInvalidArgument for an empty channel or a nil msg.
func (s *Store) Publish(ctx context.Context, channel string, msg []byte) error {
	const op = "publish"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if channel == "" || msg == nil {
		return fmt.Errorf("redis: %s: empty channel or nil message: %w", op, store.ErrInvalidArgument)
	}
	if err := s.client.Publish(ctx, s.redisChannel(channel), msg).Err(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Subscribe implements store.Store. It returns once Redis has confirmed the
// subscription, or when ctx ends. A subscription buffers 64 messages; when
// its buffer is full, a message is dropped and the subscription receives
// instead, after the messages it buffered, a message with Resubscribed set.
//
// A channel that already has a subscription is confirmed already, so
// Subscribe returns at once, even during an outage that go-redis has not
// detected yet; the new subscription then receives Resubscribed when the
// connection is back, like the others.
func (s *Store) Subscribe(ctx context.Context, channel string) (store.Subscription, error) {
	const op = "subscribe"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	if channel == "" {
		return nil, fmt.Errorf("redis: %s: empty channel: %w", op, store.ErrInvalidArgument)
	}
	sub, ready, writeErr, err := s.hub.add(ctx, s.redisChannel(channel))
	if err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, err)
	}
	select {
	case <-ready:
		return sub, nil
	case <-ctx.Done():
		sub.Close()
		// A failed SUBSCRIBE write is retried by go-redis's reconnection,
		// so it matters only once waiting has failed too.
		return nil, fmt.Errorf("redis: %s: %w", op, errors.Join(ctx.Err(), writeErr))
	case <-s.hub.stop:
		return nil, fmt.Errorf("redis: %s: %w", op, store.ErrClosed)
	}
}

// hub multiplexes the subscriptions of a Store over one go-redis PubSub.
//
// go-redis reconnects the PubSub after a failure and sends SUBSCRIBE again
// for every channel, and Redis confirms each channel once per SUBSCRIBE.
// The first confirmation of a channel makes its subscriptions active; any
// later one means the channel was subscribed again, and each of its
// subscriptions receives a Resubscribed notice.
//
// mu guards the routing table and every send on and close of a
// subscription's channel, so that a channel is never sent on after it is
// closed, and never closed twice. It is held while calling the PubSub's
// Subscribe and Unsubscribe, so that Redis sees them in the order of the
// routing table's changes.
type hub struct {
	s    *Store
	stop chan struct{} // closed by close

	mu       sync.Mutex
	closed   bool
	ps       *redis.PubSub        // nil until the first Subscribe
	done     chan struct{}        // closed when dispatch returns
	channels map[string]*rchannel // by Redis channel name
}

// rchannel is the state of one Redis channel.
type rchannel struct {
	subs   map[*subscription]struct{}
	active bool          // Redis has confirmed the subscription
	ready  chan struct{} // closed when active becomes true
}

func (h *hub) init(s *Store) {
	h.s = s
	h.stop = make(chan struct{})
	h.channels = make(map[string]*rchannel)
}

// add adds a subscription to name. It returns the subscription, a channel
// closed once the subscription is active, and the error of writing
// SUBSCRIBE, if any.
func (h *hub) add(ctx context.Context, name string) (sub *subscription, ready <-chan struct{}, writeErr, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, nil, store.ErrClosed
	}
	if h.ps == nil {
		// The PubSub connects on first use; its messages, confirmations
		// included, arrive on msgs, which go-redis closes when the PubSub
		// is closed.
		h.ps = h.s.client.Subscribe(context.Background())
		msgs := h.ps.ChannelWithSubscriptions()
		h.done = make(chan struct{})
		go h.dispatch(msgs)
	}
	c := h.channels[name]
	if c == nil {
		c = &rchannel{
			subs:  make(map[*subscription]struct{}),
			ready: make(chan struct{}),
		}
		h.channels[name] = c
		// go-redis records the channel even when the write fails, and
		// subscribes it again when it reconnects.
		writeErr = h.ps.Subscribe(ctx, name)
	}
	sub = &subscription{
		h:    h,
		name: name,
		box:  mailbox.New(),
	}
	c.subs[sub] = struct{}{}
	return sub, c.ready, writeErr, nil
}

// dispatch routes what the PubSub receives until msgs is closed.
func (h *hub) dispatch(msgs <-chan any) {
	defer close(h.done)
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *redis.Message:
			h.deliver(m.Channel, store.Message{Data: []byte(m.Payload)})
		}
	}
}

// confirmed handles Redis's confirmation of a subscription to name.
func (h *hub) confirmed(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[name]
	if c == nil {
		return // every subscription of the channel has closed since
	}
	if !c.active {
		c.active = true
		close(c.ready)
		return
	}
	for sub := range c.subs {
		sub.deliver(store.Message{Resubscribed: true})
	}
}

// deliver sends m to every subscription of name.
func (h *hub) deliver(name string, m store.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[name]
	if c == nil || !c.active {
		return
	}
	for sub := range c.subs {
		sub.deliver(m)
	}
}

// close ends every subscription, closes the PubSub and waits for dispatch
// to return.
func (h *hub) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.stop)
	for _, c := range h.channels {
		for sub := range c.subs {
			sub.box.Close()
		}
	}
	h.channels = nil
	ps, done := h.ps, h.done
	h.mu.Unlock()

	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-done
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

// subscription implements store.Subscription.
type subscription struct {
	h    *hub
	name string       // the Redis channel
	box  *mailbox.Box // guarded by h.mu
}

// deliver sends m on sub's channel without blocking (see package
// mailbox). The hub must be locked.
func (sub *subscription) deliver(m store.Message) { sub.box.Deliver(m) }

// Messages implements store.Subscription.
func (sub *subscription) Messages() <-chan store.Message { return sub.box.C() }

// Err implements store.Subscription. go-redis reconnects the PubSub for as
// long as the store is open, so a Redis subscription never fails: Err
// always returns nil.
func (sub *subscription) Err() error { return nil }

// Close implements store.Subscription. When it closes the last subscription
// of a channel, it unsubscribes the channel. That takes effect even if
// writing UNSUBSCRIBE fails: go-redis forgets the channel at once and does
// not subscribe it again.
func (sub *subscription) Close() error {
	h := sub.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !sub.box.Close() {
		return nil
	}
	c := h.channels[sub.name]
	delete(c.subs, sub)
	if len(c.subs) == 0 {
		delete(h.channels, sub.name)
		_ = h.ps.Unsubscribe(context.Background(), sub.name)
	}
	return nil
}

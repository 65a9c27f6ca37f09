package redis

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/elicitvault/elicitvault/store"
	"github.com/redis/go-redis/v9"
)

// Publish implements store.Driver: PUBLISH <prefix>{<channel>} msg.
func (s *driver) Publish(ctx context.Context, channel string, msg []byte) error {
	h := s.hubFor(channel)
	var err error
	if h.sharded {
		err = s.client.SPublish(ctx, h.name(channel), msg).Err()
	} else {
		err = s.client.Publish(ctx, h.name(channel), msg).Err()
	}
	if err != nil {
		return err
	}
	return nil
}

// Subscribe implements store.Driver. It returns once Redis has confirmed the
// subscription, or when ctx ends.
func (s *driver) Subscribe(ctx context.Context, channel string, deliver func(store.Message)) (func(), error) {
	h := s.hubFor(channel)
	name := h.name(channel)
	c, writeErr, err := h.add(ctx, name, deliver)
	if err != nil {
		return nil, err
	}
	unsubscribe := func() { h.remove(name, c) }
	select {
	case <-c.ready:
		return unsubscribe, nil
	case <-ctx.Done():
		unsubscribe()
		// A failed SUBSCRIBE write is retried by go-redis's reconnection,
		// so it matters only once waiting has failed too.
		return nil, errors.Join(ctx.Err(), writeErr)
	case <-h.stop:
		return nil, store.ErrClosed
	}
}

// hub multiplexes the subscriptions of a Store over one go-redis PubSub.
//
// go-redis reconnects the PubSub after a failure and sends SUBSCRIBE again
// for every channel, and Redis confirms each channel once per SUBSCRIBE.
// The first confirmation of a channel makes its subscription active; any
// later one means the channel was subscribed again, and its subscription
// receives a Resubscribed notice.
//
// mu guards the routing table and every call of a channel's deliver, so
// that none comes after the channel's unsubscribe returned. It is held
// while calling the PubSub's Subscribe and Unsubscribe, so that Redis sees
// them in the order of the routing table's changes.
//
// A sharded hub also subscribes its anchor, a channel of its slot that
// nothing publishes on, for as long as the hub is open. The anchor keeps
// the PubSub tied to the slot's primary when the hub has no other
// channel (go-redis reconnects a PubSub with no channel to a random
// node), so the hub keeps one connection instead of dialling a new one
// each time its subscription count comes back from zero.
type hub struct {
	s       *driver
	stop    chan struct{} // closed by close
	sharded bool          // SSUBSCRIBE and SPUBLISH, on a cluster
	group   string        // the hash tag of the hub's channels, if sharded
	anchor  string        // the Redis channel that holds a sharded PubSub to its slot

	mu       sync.Mutex
	closed   bool
	ps       *redis.PubSub        // nil until the first Subscribe
	dones    []chan struct{}      // closed when each PubSub's dispatch returns
	channels map[string]*rchannel // by Redis channel name
}

// rchannel is the state of one Redis channel.
type rchannel struct {
	deliver func(store.Message) // the Store's
	active  bool                // Redis has confirmed the subscription
	ready   chan struct{}       // closed when active becomes true
}

func (h *hub) init(s *driver, sharded bool, group string) {
	h.s = s
	h.sharded = sharded
	h.group = group
	if sharded {
		h.anchor = s.prefix + "{" + group + "}"
	}
	h.stop = make(chan struct{})
	h.channels = make(map[string]*rchannel)
}

// add subscribes name, whose messages go to deliver. It returns the
// channel, whose ready is closed once the subscription is active, and the
// error of writing SUBSCRIBE, if any.
func (h *hub) add(ctx context.Context, name string, deliver func(store.Message)) (c *rchannel, writeErr, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, store.ErrClosed
	}
	c = &rchannel{deliver: deliver, ready: make(chan struct{})}
	h.channels[name] = c
	// go-redis records the channel even when the write fails, and
	// subscribes it again when it reconnects.
	switch {
	case h.ps == nil:
		writeErr = h.connect()
	case h.sharded:
		writeErr = h.ps.SSubscribe(ctx, name)
	default:
		writeErr = h.ps.Subscribe(ctx, name)
	}
	return c, writeErr, nil
}

// remove unsubscribes c, the channel name. That takes effect even if
// writing UNSUBSCRIBE fails: go-redis forgets the channel at once and does
// not subscribe it again.
func (h *hub) remove(name string, c *rchannel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.channels[name] != c {
		return // the hub is closed
	}
	delete(h.channels, name)
	if h.sharded {
		_ = h.ps.SUnsubscribe(context.Background(), name)
	} else {
		_ = h.ps.Unsubscribe(context.Background(), name)
	}
}

// connect makes the hub's PubSub, subscribed to the channels the hub
// has (and, if sharded, its anchor), and starts dispatching what it
// receives. The hub must be locked, and have at least one channel. It
// returns the error of writing the subscription, which go-redis retries
// when it reconnects.
//
// A sharded PubSub connects to the node that its first channel's slot
// names when it subscribes, which must come before go-redis starts
// receiving: a PubSub that connects with no channel picks a random node.
func (h *hub) connect() error {
	names := make([]string, 0, len(h.channels)+1)
	if h.sharded {
		names = append(names, h.anchor)
	}
	for name := range h.channels {
		names = append(names, name)
	}
	var err error
	if h.sharded {
		h.ps = h.s.client.SSubscribe(context.Background())
		err = h.ps.SSubscribe(context.Background(), names...)
	} else {
		h.ps = h.s.client.Subscribe(context.Background())
		err = h.ps.Subscribe(context.Background(), names...)
	}
	// Messages, confirmations included, arrive on msgs, which go-redis
	// closes when the PubSub is closed.
	msgs := h.ps.ChannelWithSubscriptions()
	done := make(chan struct{})
	h.dones = append(h.dones, done)
	go h.dispatch(h.ps, msgs, done)
	return err
}

// retire closes the hub's PubSub without waiting for its dispatch to
// return (it may be waiting for the hub's lock); close waits for it. The
// hub must be locked.
func (h *hub) retire() {
	go h.ps.Close()
	h.ps = nil
}

// dispatch routes what ps receives until msgs is closed, then closes done.
func (h *hub) dispatch(ps *redis.PubSub, msgs <-chan any, done chan struct{}) {
	defer close(done)
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirmed(m.Channel)
			case "sunsubscribe":
				h.unsubscribed(ps, m.Channel)
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
		return // unsubscribed since
	}
	if !c.active {
		c.active = true
		close(c.ready)
		return
	}
	c.deliver(store.Message{Resubscribed: true})
}

// unsubscribed handles a SUNSUBSCRIBE confirmation for name on ps. Redis
// Cluster sends one without being asked when the node stops serving the
// channel's slot (a failover made it a replica, or the slot moved): the
// PubSub stays connected to a node that no longer delivers the channel,
// so the hub replaces it with one that go-redis connects to the slot's
// current primary, and each subscription receives a Resubscribed notice
// once the channel is confirmed there.
func (h *hub) unsubscribed(ps *redis.PubSub, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ps != ps || name != h.anchor {
		// An old PubSub, or a channel the hub unsubscribed itself. Redis
		// unsubscribes every channel of a slot it stops serving, so the
		// anchor, which the hub never unsubscribes, tells it for all.
		return
	}
	if cc, ok := h.s.client.(*redis.ClusterClient); ok {
		cc.ReloadState(context.Background())
	}
	h.retire()
	h.connect()
}

// deliver sends m to the subscription of name.
func (h *hub) deliver(name string, m store.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[name]
	if c == nil || !c.active {
		return
	}
	c.deliver(m)
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
	h.channels = nil
	ps, dones := h.ps, h.dones
	h.mu.Unlock()

	var err error
	if ps != nil {
		err = ps.Close()
	}
	// The dispatch of every PubSub, the retired ones included.
	for _, done := range dones {
		<-done
	}
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

// channelGroups is the number of groups that a cluster store spreads its
// channels over. The channels of one group share a hash tag, so one
// sharded PubSub connection, to the primary of that slot, serves them all;
// a store holds at most channelGroups Pub/Sub connections however many
// channels it subscribes, and keeps each from its group's first Subscribe
// until Close.
const channelGroups = 16

// initHubs makes the store's hubs: one for a server or a Sentinel-managed
// primary, channelGroups on a cluster.
func (s *driver) initHubs() {
	if _, ok := s.client.(*redis.ClusterClient); !ok {
		h := &hub{}
		h.init(s, false, "")
		s.hubs = []*hub{h}
		return
	}
	for g := range channelGroups {
		h := &hub{}
		h.init(s, true, fmt.Sprintf("g%02d", g))
		s.hubs = append(s.hubs, h)
	}
}

// hubFor returns the hub of a store channel.
func (s *driver) hubFor(channel string) *hub {
	if len(s.hubs) == 1 {
		return s.hubs[0]
	}
	f := fnv.New32a()
	f.Write([]byte(channel))
	return s.hubs[f.Sum32()%uint32(len(s.hubs))]
}

// name returns the Redis channel of a store channel: <prefix>{<channel>}
// on a server, <prefix>{<group>}<channel> on a cluster, where the group's
// hash tag puts every channel of the hub in one slot.
func (h *hub) name(channel string) string {
	if !h.sharded {
		return h.s.redisChannel(channel)
	}
	return h.s.prefix + "{" + h.group + "}" + channel
}

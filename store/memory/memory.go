// Package memory implements store.Store in the memory of one process.
//
// It suits a single instance and tests: entries and subscriptions are not
// shared between processes and do not survive a restart.
//
// Entries live in sharded maps, so that concurrent use scales with the
// number of cores. Values are copied on the way in and on the way out:
// callers may reuse the slices they pass and modify the ones they get. An
// expired entry reads as absent at once and is removed by a background
// sweeper, or earlier when an operation touches it.
package memory

import (
	"container/heap"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/internal/mailbox"
)

const (
	// numShards is the number of independently locked maps.
	numShards = 64
	// defaultSweepInterval is how often the sweeper removes expired entries.
	defaultSweepInterval = time.Second
)

// Store is a store.Store held in memory. Create one with New; the zero value
// is not usable.
type Store struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [numShards]shard

	closed atomic.Bool
	stop   chan struct{} // closed by Close to stop the sweeper
	done   chan struct{} // closed by the sweeper when it returns; nil without one

	ps pubsub
}

var _ store.Store = (*Store)(nil)

// shard is one lock and the entries whose keys hash to it. Its map is nil
// once the store is closed.
type shard struct {
	mu sync.Mutex
	m  map[string]entry
}

// entry is one stored value. It holds no pointer besides the value's bytes,
// so that a million entries stay cheap for the garbage collector.
type entry struct {
	value  string // an immutable copy of the caller's bytes
	expiry int64  // Unix milliseconds; the entry is live while now < expiry
}

// Options configures a Store; nil means the defaults.
type Options struct {
	// Clock, when set, is read for the current time instead of time.Now.
	// It is meant for tests.
	Clock func() time.Time

	// SweepInterval is how often the background sweeper removes expired
	// entries: one second when zero. A negative interval disables the
	// sweeper: expired entries then still read as absent, but are removed
	// only when an operation touches them.
	SweepInterval time.Duration
}

// New returns an empty Store. Its background sweeper runs until Close.
func New(opts *Options) *Store {
	c := Options{Clock: time.Now, SweepInterval: defaultSweepInterval}
	if opts != nil {
		if opts.Clock != nil {
			c.Clock = opts.Clock
		}
		if opts.SweepInterval != 0 {
			c.SweepInterval = opts.SweepInterval
		}
	}
	s := &Store{
		now:  c.Clock,
		seed: maphash.MakeSeed(),
		stop: make(chan struct{}),
		ps:   pubsub{subs: make(map[string]map[*subscription]struct{})},
	}
	for i := range s.shards {
		s.shards[i].m = make(map[string]entry)
	}
	if c.SweepInterval > 0 {
		s.done = make(chan struct{})
		go s.sweep(c.SweepInterval)
	}
	return s
}

// begin checks what every operation checks first: that the store is open
// and that ctx is not done.
func (s *Store) begin(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

// lock locks and returns the shard of key. The caller must unlock it, and
// must check for a nil map, which means the store was closed concurrently.
func (s *Store) lock(key string) *shard {
	sh := &s.shards[maphash.String(s.seed, key)%numShards]
	sh.mu.Lock()
	return sh
}

// live returns the live entry under key, removing it if it has expired.
// The shard must be locked and open.
func (sh *shard) live(key string, now int64) (entry, bool) {
	e, ok := sh.m[key]
	if !ok {
		return entry{}, false
	}
	if e.expiry <= now {
		delete(sh.m, key)
		return entry{}, false
	}
	return e, true
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	if err := store.CheckWrite(key, value, expiry, s.now()); err != nil {
		return err
	}
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return store.ErrClosed
	}
	sh.m[key] = entry{value: string(value), expiry: expiry.UnixMilli()}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, store.ErrInvalidArgument
	}
	now := s.now().UnixMilli()
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return nil, store.ErrClosed
	}
	e, ok := sh.live(key, now)
	if !ok {
		return nil, store.ErrNotFound
	}
	return []byte(e.value), nil
}

// Take implements store.Store.
func (s *Store) Take(ctx context.Context, key string) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, store.ErrInvalidArgument
	}
	now := s.now().UnixMilli()
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return nil, store.ErrClosed
	}
	e, ok := sh.live(key, now)
	if !ok {
		return nil, store.ErrNotFound
	}
	delete(sh.m, key)
	return []byte(e.value), nil
}

// PutIfAbsent implements store.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	now := s.now()
	if err := store.CheckWrite(key, value, expiry, now); err != nil {
		return false, err
	}
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return false, store.ErrClosed
	}
	if _, ok := sh.live(key, now.UnixMilli()); ok {
		return false, nil
	}
	sh.m[key] = entry{value: string(value), expiry: expiry.UnixMilli()}
	return true, nil
}

// Swap implements store.Store.
func (s *Store) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	now := s.now()
	if err := store.CheckWrite(key, value, expiry, now); err != nil {
		return nil, err
	}
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return nil, store.ErrClosed
	}
	var old []byte
	if e, ok := sh.live(key, now.UnixMilli()); ok {
		old = []byte(e.value)
	}
	sh.m[key] = entry{value: string(value), expiry: expiry.UnixMilli()}
	return old, nil
}

// CompareAndSwap implements store.Store. The old value must not be nil.
// When value is nil the entry is deleted and expiry is ignored.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	now := s.now()
	if key == "" || old == nil {
		return false, store.ErrInvalidArgument
	}
	if value != nil {
		if err := store.CheckWrite(key, value, expiry, now); err != nil {
			return false, err
		}
	}
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return false, store.ErrClosed
	}
	e, ok := sh.live(key, now.UnixMilli())
	if !ok || e.value != string(old) {
		return false, nil
	}
	if value == nil {
		delete(sh.m, key)
	} else {
		sh.m[key] = entry{value: string(value), expiry: expiry.UnixMilli()}
	}
	return true, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	if key == "" {
		return store.ErrInvalidArgument
	}
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return store.ErrClosed
	}
	delete(sh.m, key)
	return nil
}

// Scan implements store.Store. It returns live entries in increasing key
// order, starting after the key cursor, and the last key it returns as the
// next cursor, or "" when no entry is left. Count must be positive.
//
// Each call visits every entry and costs O(n log count) time, so a full
// scan costs O(n²/count · log count): it is meant for maintenance, not for
// a hot path.
func (s *Store) Scan(ctx context.Context, cursor string, count int) ([]store.Entry, string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, "", err
	}
	if count <= 0 {
		return nil, "", store.ErrInvalidArgument
	}
	now := s.now().UnixMilli()
	// h holds the count smallest keys after cursor seen so far, largest
	// first, so that a smaller key can replace the largest in O(log count).
	h := &keyHeap{s: make([]keyedEntry, 0, min(count, 1024))}
	candidates := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if sh.m == nil {
			sh.mu.Unlock()
			return nil, "", store.ErrClosed
		}
		for k, e := range sh.m {
			if e.expiry <= now || k <= cursor {
				continue
			}
			candidates++
			switch {
			case h.Len() < count:
				heap.Push(h, keyedEntry{k, e})
			case k < h.s[0].key:
				h.s[0] = keyedEntry{k, e}
				heap.Fix(h, 0)
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(h.s, func(a, b keyedEntry) int { return strings.Compare(a.key, b.key) })
	entries := make([]store.Entry, len(h.s))
	for i, ke := range h.s {
		entries[i] = store.Entry{
			Key:    ke.key,
			Value:  []byte(ke.value),
			Expiry: time.UnixMilli(ke.expiry),
		}
	}
	next := ""
	if candidates > count {
		next = entries[len(entries)-1].Key
	}
	return entries, next, nil
}

type keyedEntry struct {
	key string
	entry
}

// keyHeap is a max-heap of entries ordered by key, for container/heap.
type keyHeap struct{ s []keyedEntry }

func (h *keyHeap) Len() int           { return len(h.s) }
func (h *keyHeap) Less(i, j int) bool { return h.s[i].key > h.s[j].key }
func (h *keyHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *keyHeap) Push(x any)         { h.s = append(h.s, x.(keyedEntry)) }
func (h *keyHeap) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}

// sweep removes expired entries every interval until Close.
func (s *Store) sweep(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.removeExpired()
		}
	}
}

// removeExpired removes the expired entries of every shard, locking one
// shard at a time.
func (s *Store) removeExpired() {
	for i := range s.shards {
		now := s.now().UnixMilli()
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if e.expiry <= now {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// Close stops the sweeper, drops every entry and closes the channel of
// every open subscription. It returns ErrClosed if the store is already
// closed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return store.ErrClosed
	}
	close(s.stop)
	if s.done != nil {
		<-s.done
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.m = nil
		sh.mu.Unlock()
	}
	s.ps.close()
	return nil
}

// pubsub routes published messages to subscriptions. One mutex guards the
// routing table and every send on and close of a subscription's channel, so
// that a channel is never sent on after it is closed, and never closed
// twice.
type pubsub struct {
	mu     sync.Mutex
	closed bool
	subs   map[string]map[*subscription]struct{} // by channel
}

// subscription implements store.Subscription.
type subscription struct {
	ps      *pubsub
	channel string
	box     *mailbox.Box // guarded by ps.mu
}

// Publish implements store.Store. It never blocks: a subscriber whose
// buffer is full misses msg, and receives instead, right after the messages
// it has buffered, a message with Resubscribed set, telling it to read the
// store again. Publish returns ErrInvalidArgument for an empty channel or a
// nil msg.
func (s *Store) Publish(ctx context.Context, channel string, msg []byte) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	if channel == "" || msg == nil {
		return store.ErrInvalidArgument
	}
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	if s.ps.closed {
		return store.ErrClosed
	}
	for sub := range s.ps.subs[channel] {
		sub.box.Deliver(store.Message{Data: msg})
	}
	return nil
}

// Subscribe implements store.Store. The subscription buffers
// mailbox.Size messages;
// see Publish for what happens when its buffer is full. It returns
// ErrInvalidArgument for an empty channel.
func (s *Store) Subscribe(ctx context.Context, channel string) (store.Subscription, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if channel == "" {
		return nil, store.ErrInvalidArgument
	}
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	if s.ps.closed {
		return nil, store.ErrClosed
	}
	sub := &subscription{
		ps:      &s.ps,
		channel: channel,
		box:     mailbox.New(),
	}
	subs := s.ps.subs[channel]
	if subs == nil {
		subs = make(map[*subscription]struct{})
		s.ps.subs[channel] = subs
	}
	subs[sub] = struct{}{}
	return sub, nil
}

// close closes every subscription and refuses new ones.
func (ps *pubsub) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.closed = true
	for _, subs := range ps.subs {
		for sub := range subs {
			sub.box.Close()
		}
	}
	ps.subs = nil
}

// Messages implements store.Subscription.
func (sub *subscription) Messages() <-chan store.Message { return sub.box.C() }

// Err implements store.Subscription. A memory subscription never fails, so
// Err always returns nil.
func (sub *subscription) Err() error { return nil }

// Close implements store.Subscription.
func (sub *subscription) Close() error {
	ps := sub.ps
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !sub.box.Close() {
		return nil
	}
	subs := ps.subs[sub.channel]
	delete(subs, sub)
	if len(subs) == 0 {
		delete(ps.subs, sub.channel)
	}
	return nil
}

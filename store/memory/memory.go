// Package memory implements [store.Store] in the memory of one process.
//
//	st := memory.New(nil)
//	defer st.Close()
//	ev, err := elicit.New(keys, st, nil)
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
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

const (
	// numShards is the number of independently locked maps.
	numShards = 64
	// defaultSweepInterval is how often the sweeper removes expired entries.
	defaultSweepInterval = time.Second
)

// driver is the memory store's store.Driver.
type driver struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [numShards]shard

	stop chan struct{} // closed by Close to stop the sweeper
	done chan struct{} // closed by the sweeper when it returns; nil without one

	ps pubsub
}

var _ store.Driver = (*driver)(nil)

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

// New returns an empty store. Its background sweeper runs until Close.
func New(opts *Options) store.Store {
	d := newDriver(opts)
	return store.New("memory", d, d.now)
}

func newDriver(opts *Options) *driver {
	c := Options{Clock: time.Now, SweepInterval: defaultSweepInterval}
	if opts != nil {
		if opts.Clock != nil {
			c.Clock = opts.Clock
		}
		if opts.SweepInterval != 0 {
			c.SweepInterval = opts.SweepInterval
		}
	}
	s := &driver{
		now:  c.Clock,
		seed: maphash.MakeSeed(),
		stop: make(chan struct{}),
		ps:   pubsub{subs: make(map[string]*func(store.Message))},
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

// lock locks and returns the shard of key. The caller must unlock it, and
// must check for a nil map, which means the store was closed concurrently.
func (s *driver) lock(key string) *shard {
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

func (s *driver) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return store.ErrClosed
	}
	sh.m[key] = entry{value: string(value), expiry: expiry.UnixMilli()}
	return nil
}

func (s *driver) Get(ctx context.Context, key string) ([]byte, error) { return s.read(key, false) }

func (s *driver) Take(ctx context.Context, key string) ([]byte, error) { return s.read(key, true) }

// read returns key's live value, and deletes the entry if take.
func (s *driver) read(key string, take bool) ([]byte, error) {
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
	if take {
		delete(sh.m, key)
	}
	return []byte(e.value), nil
}

func (s *driver) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	now := s.now()
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

// PutIfAbsentGet implements store.Driver: it returns errors.ErrUnsupported,
// so that the Store calls PutIfAbsent, then Get (whose read takes other's
// lock after the write released key's).
func (s *driver) PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error) {
	return false, nil, errors.ErrUnsupported
}

func (s *driver) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	now := s.now()
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

// CompareAndSwap ignores expiry when value is nil.
func (s *driver) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	now := s.now()
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

func (s *driver) Delete(ctx context.Context, key string) error {
	sh := s.lock(key)
	defer sh.mu.Unlock()
	if sh.m == nil {
		return store.ErrClosed
	}
	delete(sh.m, key)
	return nil
}

// Scan returns live entries in increasing key
// order, starting after the key cursor, and the last key it returns as the
// next cursor, or "" when no entry is left. Count must be positive.
//
// Each call visits every entry and costs O(n log count) time, so a full
// scan costs O(n²/count · log count): it is meant for maintenance, not for
// a hot path.
func (s *driver) Scan(ctx context.Context, cursor string, count int) ([]store.Entry, string, error) {
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
func (s *driver) sweep(interval time.Duration) {
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
func (s *driver) removeExpired() {
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

// Close stops the sweeper and drops every entry.
func (s *driver) Close() error {
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
	s.ps.mu.Lock()
	s.ps.subs = nil
	s.ps.mu.Unlock()
	return nil
}

// pubsub routes published messages to the deliver function of their
// channel (the Store's, which never blocks and hands each message to the
// channel's subscriptions).
type pubsub struct {
	mu   sync.Mutex
	subs map[string]*func(store.Message) // by channel; nil once closed
}

// Publish never blocks: a subscriber whose buffer is full misses msg, and
// receives instead, right after the messages it has buffered, a message
// with Resubscribed set, telling it to read the store again.
func (s *driver) Publish(ctx context.Context, channel string, msg []byte) error {
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	if s.ps.subs == nil {
		return store.ErrClosed
	}
	if deliver := s.ps.subs[channel]; deliver != nil {
		(*deliver)(store.Message{Data: msg})
	}
	return nil
}

// Subscribe is active at once.
func (s *driver) Subscribe(ctx context.Context, channel string, deliver func(store.Message)) (func(), error) {
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	if s.ps.subs == nil {
		return nil, store.ErrClosed
	}
	key := &deliver
	s.ps.subs[channel] = key
	return func() {
		s.ps.mu.Lock()
		defer s.ps.mu.Unlock()
		if s.ps.subs[channel] == key {
			delete(s.ps.subs, channel)
		}
	}, nil
}

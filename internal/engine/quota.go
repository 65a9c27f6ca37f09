package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// quietFor is how long a bound, once its records were read back and
// none was found gone, refuses without reading them again: the client's
// for that client, the total for everyone. It bounds what refused calls
// cost the store.
const quietFor = time.Second

// Limits bound the elicitations pending on one Engine: in number and in
// bytes of their pending records, in total and per client
// (Identity.Client); Max and PerClient also bound the tasks running on
// it (Tasks.Launch). Each must be positive.
type Limits struct {
	Max, PerClient           int
	MaxBytes, PerClientBytes int
}

// quota counts the elicitations this Engine asked that are pending, in
// number and in bytes, in total and per client. An elicitation is counted
// from the moment its pending record is written until this node ends it,
// it expires, or its record is found gone from the store: one answered on
// another node is dropped when a bound is reached and the records it
// counts are read back (for the client's bound, that client's; for the
// total, all of them). So the count that refuses is the count of what is
// actually pending, except for quietFor after a read-back that found
// every record there.
type quota struct {
	Limits

	mu      sync.Mutex
	pending map[string]*quotaEntry // elicitation ID → entry
	clients map[string]*usage
	total   usage
	gen     uint64 // counts the additions
}

type usage struct {
	n, bytes int
	quiet    time.Time // no read-back before
}

type quotaEntry struct {
	client string
	size   int
	expiry time.Time
	s      *Slot // where its pending record is
	// written is set once its pending record is in the store: only then
	// does a missing record mean it ended elsewhere (a read-back while the
	// write is under way would find none and drop a live count).
	written bool
}

func newQuota(l Limits) *quota {
	return &quota{
		Limits:  l,
		pending: make(map[string]*quotaEntry), clients: make(map[string]*usage),
	}
}

// acquire counts the elicitation of slot s, whose pending record is size
// bytes, for client, or returns ErrTooManyPending. When a bound is
// reached it first drops what expired, then what is no longer in the
// store; it reads again (up to three times) while that frees something or
// others were counted meanwhile, whose reads may be newer than its own.
func (q *quota) acquire(ctx context.Context, s *Slot, client string, size int) error {
	for attempt := 0; ; attempt++ {
		now := s.e.Now()
		q.mu.Lock()
		if _, ok := q.pending[s.ID]; ok {
			q.mu.Unlock()
			return nil
		}
		clientFull, totalFull := q.full(client, size)
		if clientFull || totalFull {
			q.sweep(now)
			clientFull, totalFull = q.full(client, size)
		}
		if !clientFull && !totalFull {
			q.add(s, client, size)
			q.mu.Unlock()
			return nil
		}
		u := q.clients[client]
		checkClient := clientFull && u != nil && !now.Before(u.quiet)
		checkAll := totalFull && !now.Before(q.total.quiet)
		var check []*quotaEntry
		if attempt < 3 && (checkClient || checkAll) {
			for _, en := range q.pending {
				if en.written && (checkAll || en.client == client) {
					check = append(check, en)
				}
			}
		}
		gen := q.gen
		q.mu.Unlock()
		if len(check) == 0 {
			return ErrTooManyPending
		}

		gone := goneFrom(ctx, check)
		q.mu.Lock()
		for _, en := range gone {
			if q.pending[en.s.ID] == en {
				q.remove(en.s.ID)
			}
		}
		changed := q.gen != gen
		if len(gone) == 0 && !changed {
			if u := q.clients[client]; u != nil && checkClient {
				u.quiet = now.Add(quietFor)
			}
			if checkAll {
				q.total.quiet = now.Add(quietFor)
			}
			q.mu.Unlock()
			return ErrTooManyPending
		}
		q.mu.Unlock()
	}
}

// add counts an elicitation. q.mu is held.
func (q *quota) add(s *Slot, client string, size int) {
	q.gen++
	q.pending[s.ID] = &quotaEntry{client: client, size: size, expiry: s.Expiry, s: s}
	u := q.clients[client]
	if u == nil {
		u = &usage{}
		q.clients[client] = u
	}
	u.n++
	u.bytes += size
	q.total.n++
	q.total.bytes += size
}

// full reports which bounds one more record of size bytes for client
// would exceed. q.mu is held.
func (q *quota) full(client string, size int) (clientFull, totalFull bool) {
	var u usage
	if c := q.clients[client]; c != nil {
		u = *c
	}
	clientFull = u.n >= q.PerClient || u.bytes+size > q.PerClientBytes
	totalFull = q.total.n >= q.Max || q.total.bytes+size > q.MaxBytes
	return
}

// goneFrom returns the entries whose pending record is no longer in the
// store. A store that fails to answer keeps the entry counted.
func goneFrom(ctx context.Context, entries []*quotaEntry) []*quotaEntry {
	var gone []*quotaEntry
	for _, en := range entries {
		if ctx.Err() != nil {
			break
		}
		_, err := en.s.e.keys.Lookup(ctx, en.s.e.store, en.s.Binding(PurposePending))
		if errors.Is(err, store.ErrNotFound) {
			gone = append(gone, en)
		}
	}
	return gone
}

// written records that the pending record of elicitation id is in the
// store, so that a read-back may find it gone.
func (q *quota) written(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if en, ok := q.pending[id]; ok {
		en.written = true
	}
}

// release stops counting an elicitation; it is a no-op for one this node
// does not count.
func (q *quota) release(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(id)
}

func (q *quota) remove(id string) {
	en, ok := q.pending[id]
	if !ok {
		return
	}
	delete(q.pending, id)
	q.total.n--
	q.total.bytes -= en.size
	if u := q.clients[en.client]; u != nil {
		u.n--
		u.bytes -= en.size
		if u.n <= 0 {
			delete(q.clients, en.client)
		}
	}
}

// sweep forgets the expired elicitations. q.mu is held.
func (q *quota) sweep(now time.Time) {
	for id, en := range q.pending {
		if !en.expiry.After(now) {
			q.remove(id)
		}
	}
}

package elicit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// Defaults of the pending quotas of Config.
const (
	// DefaultMaxPending bounds the elicitations pending on one Elicitor.
	DefaultMaxPending = 10000
	// DefaultMaxPendingPerSubject bounds the elicitations pending on one
	// Elicitor for one client: an authenticated user, else a session,
	// else its address as Handler sees it (HandlerOptions.Client).
	DefaultMaxPendingPerSubject = 100
	// DefaultMaxPendingBytes bounds the pending records of one Elicitor,
	// in bytes of their JSON encoding.
	DefaultMaxPendingBytes = 64 << 20
	// DefaultMaxPendingBytesPerSubject bounds the pending records of one
	// client on one Elicitor, in bytes.
	DefaultMaxPendingBytesPerSubject = 2 << 20
)

// quietFor is how long a bound, once its records were read back and
// none was found gone, refuses without reading them again: the client's
// for that client, the total for everyone. It bounds what refused calls
// cost the store.
const quietFor = time.Second

// quota counts the elicitations this Elicitor asked that are pending, in
// number and in bytes, in total and per client. An elicitation is counted
// from the moment its pending record is written until this node ends it,
// it expires, or its record is found gone from the store: one answered on
// another node is dropped when a bound is reached and the records it
// counts are read back (for the client's bound, that client's; for the
// total, all of them). So the count that refuses is the count of what is
// actually pending, except for quietFor after a read-back that found
// every record there.
type quota struct {
	max, perClient           int
	maxBytes, perClientBytes int

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
	s      *slot // where its pending record is
}

func newQuota(cfg *Config) *quota {
	q := &quota{
		max: cfg.MaxPending, perClient: cfg.MaxPendingPerSubject,
		maxBytes: cfg.MaxPendingBytes, perClientBytes: cfg.MaxPendingBytesPerSubject,
		pending: make(map[string]*quotaEntry), clients: make(map[string]*usage),
	}
	if q.max <= 0 {
		q.max = DefaultMaxPending
	}
	if q.perClient <= 0 {
		q.perClient = DefaultMaxPendingPerSubject
	}
	if q.maxBytes <= 0 {
		q.maxBytes = DefaultMaxPendingBytes
	}
	if q.perClientBytes <= 0 {
		q.perClientBytes = DefaultMaxPendingBytesPerSubject
	}
	return q
}

// acquire counts the elicitation of slot s, whose pending record is size
// bytes, for client, or returns ErrTooManyPending. When a bound is
// reached it first drops what expired, then what is no longer in the
// store; it reads again (up to three times) while that frees something or
// others were counted meanwhile, whose reads may be newer than its own.
func (q *quota) acquire(ctx context.Context, s *slot, client string, size int) error {
	for attempt := 0; ; attempt++ {
		now := s.e.now()
		q.mu.Lock()
		if _, ok := q.pending[s.id]; ok {
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
				if checkAll || en.client == client {
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
			if q.pending[en.s.id] == en {
				q.remove(en.s.id)
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
func (q *quota) add(s *slot, client string, size int) {
	q.gen++
	q.pending[s.id] = &quotaEntry{client: client, size: size, expiry: s.expiry, s: s}
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
	clientFull = u.n >= q.perClient || u.bytes+size > q.perClientBytes
	totalFull = q.total.n >= q.max || q.total.bytes+size > q.maxBytes
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
		_, err := en.s.e.keys.Lookup(ctx, en.s.e.store, en.s.binding(purposePending))
		if errors.Is(err, store.ErrNotFound) {
			gone = append(gone, en)
		}
	}
	return gone
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

// clientOf is the client an elicitation of slot s counts against: the
// authenticated user, else the session (a transport session or a
// connection), else, on a stateless server, the client ID the request
// carries (WithClientID; Handler sets it from HandlerOptions.Client).
// Without one, anonymous stateless callers share one client.
func (s *slot) clientOf(ctx context.Context) string {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return s.who.Client(id)
}

type clientIDKey struct{}

// WithClientID returns ctx carrying id, the identity of the client of an
// unauthenticated request on a stateless server (2026-07-28), which the
// Elicitor's pending quotas count per client (see Config.MaxPending). Handler
// does this for every request; a server that mounts the go-sdk's handler
// itself calls it in an HTTP middleware around it, with a value the
// client cannot choose (its address, or what a trusted proxy forwarded).
func WithClientID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientIDKey{}, id)
}

// withClientID wraps h, so that its requests carry their client's
// identity (WithClientID): the authenticated user, or the address client
// returns (see HandlerOptions.Client), as the session caps count it.
func withClientID(client func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := sessionClientOf(r, client)
		h.ServeHTTP(w, r.WithContext(WithClientID(r.Context(), id)))
	})
}

// Package epoch names a store's contents: a random ID written once into the
// store, which every node reads and every token carries. A store that
// loses its data (a Redis restarted without persistence, a flushed
// database, a failover that lost the key) loses the ID with it; the next
// node to look writes a new one, and state issued under the old one is
// refused, because the one-shot markers that guarded it may be gone too.
//
// The record is not secret and not sealed: storage that rewrites it can
// only make nodes refuse state (a denial of service, which storage can
// always cause) or restore an old ID after deleting markers, which is the
// marker deletion SECURITY.md already leaves to the store's operators.
package epoch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// Key is the store key of the epoch record. Its '.' keeps it apart from
// every blinded key (base64url), so no record can ever take its place.
const Key = "elicitvault.epoch"

// lifetime is the epoch record's store expiry: the contract requires
// one, and a record that outlives every deployment is never renewed.
const lifetime = 100 * 365 * 24 * time.Hour

// ID is an epoch: 8 random bytes. The zero ID is no epoch.
type ID [8]byte

// IsZero reports whether id is no epoch.
func (id ID) IsZero() bool { return id == ID{} }

// String returns id in lowercase hex.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Record is what the store holds under Key.
type Record struct {
	ID       ID
	Created  time.Time // when a node wrote it, to the millisecond
	Previous ID        // the epoch the writing node knew before, zero when none
}

// version is the first byte of an encoded Record. It differs from a
// stored record's (0xE1) and from a one-shot marker's.
const version = 0xE7

const recordSize = 1 + 8 + 8 + 8

func (r Record) encode() []byte {
	b := make([]byte, 0, recordSize)
	b = append(b, version)
	b = append(b, r.ID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Created.UnixMilli()))
	return append(b, r.Previous[:]...)
}

// Parse decodes an epoch record.
func Parse(v []byte) (Record, bool) {
	var r Record
	if len(v) != recordSize || v[0] != version {
		return r, false
	}
	copy(r.ID[:], v[1:9])
	r.Created = time.UnixMilli(int64(binary.BigEndian.Uint64(v[9:17])))
	copy(r.Previous[:], v[17:])
	return r, !r.ID.IsZero()
}

// ErrCorrupt is returned for a value under Key that is not an epoch
// record. Nodes then refuse every token that carries an epoch: they can no
// longer tell what the store remembers.
var ErrCorrupt = errors.New("epoch: the store's epoch record is unreadable")

// Read returns the store's epoch record, or store.ErrNotFound when it has
// none (a new store, or one that lost its data). It writes nothing.
func Read(ctx context.Context, st store.Store) (Record, error) {
	v, err := st.Get(ctx, Key)
	if err != nil {
		return Record{}, err
	}
	r, ok := Parse(v)
	if !ok {
		return Record{}, ErrCorrupt
	}
	return r, nil
}

// Change is a change of epoch that a Watcher saw: the store lost its data
// between two of the node's reads.
type Change struct {
	Old, New Record
}

// Options configure a Watcher.
type Options struct {
	// MaxAge is how long Current trusts its cached epoch before it reads
	// the store again (default DefaultMaxAge).
	MaxAge time.Duration
	// OnChange is called, outside any lock, each time the watcher finds
	// another epoch than the one it knew.
	OnChange func(Change)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultMaxAge is the default of Options.MaxAge.
const DefaultMaxAge = time.Second

// Watcher keeps a node's view of a store's epoch. It is safe for
// concurrent use.
type Watcher struct {
	st       store.Store
	maxAge   time.Duration
	onChange func(Change)
	now      func() time.Time

	mu      sync.Mutex
	cur     Record // zero until the first successful read
	checked time.Time
	retired []ID       // epochs known to be over, newest last, at most maxRetired
	load    sync.Mutex // one store read at a time
}

// NewWatcher returns a Watcher of st. It reads nothing until used.
func NewWatcher(st store.Store, o Options) *Watcher {
	w := &Watcher{st: st, maxAge: o.MaxAge, onChange: o.OnChange, now: o.Now}
	if w.maxAge <= 0 {
		w.maxAge = DefaultMaxAge
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// maxRetired bounds the epochs a Watcher remembers as over.
const maxRetired = 16

// Retired reports whether id is an epoch this watcher knows to be over:
// one it saw replaced, or one Retire was told of. Such a token is refused
// without a store read, so that replays of old tokens cost the store
// nothing.
func (w *Watcher) Retired(id ID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.retired {
		if r == id {
			return true
		}
	}
	return false
}

// Retire records that id is over: the store's epoch, read after id was
// issued, is another one (epochs never come back).
func (w *Watcher) Retire(id ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.retireLocked(id)
}

func (w *Watcher) retireLocked(id ID) {
	if id.IsZero() || id == w.cur.ID {
		return
	}
	for _, r := range w.retired {
		if r == id {
			return
		}
	}
	if len(w.retired) == maxRetired {
		w.retired = append(w.retired[:0], w.retired[1:]...)
	}
	w.retired = append(w.retired, id)
}

// Cached returns the epoch last read, without any store operation, and
// whether there is one.
func (w *Watcher) Cached() (ID, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur.ID, !w.cur.ID.IsZero()
}

// Current returns the store's epoch as of at most MaxAge ago: the cached
// one, or, when it is older, the store's, read (and written, for a store
// that has none) now. When the store cannot be read it returns the
// cached epoch if there is one, else the error.
func (w *Watcher) Current(ctx context.Context) (ID, error) {
	w.mu.Lock()
	cur, fresh := w.cur.ID, !w.cur.ID.IsZero() && w.now().Sub(w.checked) < w.maxAge
	w.mu.Unlock()
	if fresh {
		return cur, nil
	}
	w.load.Lock()
	defer w.load.Unlock()
	w.mu.Lock()
	cur, fresh = w.cur.ID, !w.cur.ID.IsZero() && w.now().Sub(w.checked) < w.maxAge
	w.mu.Unlock()
	if fresh { // another caller read it meanwhile
		return cur, nil
	}
	r, err := w.refresh(ctx)
	if err != nil {
		if !cur.IsZero() {
			return cur, nil
		}
		return ID{}, err
	}
	return r.ID, nil
}

// Confirm reads the store's epoch now and reports whether it is id. A
// store that has no epoch gets a new one (which is not id). In the common
// case, the store's epoch is id and the cache's, it is one store read and
// takes no lock across it.
func (w *Watcher) Confirm(ctx context.Context, id ID) (bool, error) {
	v, err := w.st.Get(ctx, Key)
	if err != nil {
		v = nil
	}
	return w.ConfirmRead(ctx, id, v)
}

// ConfirmRead is Confirm with the store's value under Key as the caller
// read it (nil when absent or unread), in the same store operation as a
// write it needs the epoch to be read after. In the common case, v is id's
// record and the cache holds id, it reads nothing; otherwise it reads
// the store again, as Refresh does.
func (w *Watcher) ConfirmRead(ctx context.Context, id ID, v []byte) (bool, error) {
	if r, ok := Parse(v); ok && r.ID == id {
		w.mu.Lock()
		same := w.cur.ID == id
		if same {
			w.checked = w.now()
		}
		w.mu.Unlock()
		if same {
			return true, nil
		}
	}
	r, err := w.Refresh(ctx)
	if err != nil {
		return false, err
	}
	return r.ID == id, nil
}

// Refresh reads the store's epoch, writes a new one if the store has none,
// updates the cache and reports a change.
func (w *Watcher) Refresh(ctx context.Context) (Record, error) {
	w.load.Lock()
	defer w.load.Unlock()
	return w.refresh(ctx)
}

func (w *Watcher) refresh(ctx context.Context) (Record, error) {
	w.mu.Lock()
	prev := w.cur
	w.mu.Unlock()

	r, err := Read(ctx, w.st)
	if errors.Is(err, store.ErrNotFound) {
		r, err = w.create(ctx, prev.ID)
	}
	if err != nil {
		return Record{}, fmt.Errorf("epoch: %w", err)
	}
	w.mu.Lock()
	w.cur, w.checked = r, w.now()
	if prev.ID != r.ID {
		w.retireLocked(prev.ID)
		w.retireLocked(r.Previous)
	}
	w.mu.Unlock()
	if !prev.ID.IsZero() && prev.ID != r.ID && w.onChange != nil {
		w.onChange(Change{Old: prev, New: r})
	}
	return r, nil
}

// create writes a new epoch record where there is none; if another node
// wrote one first, it returns that one.
func (w *Watcher) create(ctx context.Context, prev ID) (Record, error) {
	r := Record{Created: w.now().Truncate(time.Millisecond), Previous: prev}
	rand.Read(r.ID[:]) // never fails (crypto/rand)
	if r.ID.IsZero() {
		r.ID[0] = 1
	}
	ok, err := w.st.PutIfAbsent(ctx, Key, r.encode(), w.now().Add(lifetime))
	if err != nil || ok {
		return r, err
	}
	return Read(ctx, w.st)
}

package envelope

import (
	"crypto/cipher"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

// cacheKey names one derived key: the secret's key ID and the fields of
// the binding the key schedule takes.
type cacheKey struct {
	id      keyschedule.KeyID
	unbound bool
	purpose string
	subject string
	session string
}

func keyFor(id keyschedule.KeyID, b *Binding) cacheKey {
	return cacheKey{id: id, unbound: b.Unbound, purpose: b.Purpose, subject: b.Subject, session: b.SessionID}
}

// maxFront bounds the direct-mapped table in front of the LRU.
const maxFront = 1024

// aeadCache is a bounded cache of derived AEADs. It holds expanded AES keys
// and the bindings they are for (purpose, subject, session ID), never
// secrets or plaintexts.
//
// It is an LRU list with second chances (CLOCK), indexed by a map keyed by
// the whole key, plus a direct-mapped table of recently used entries that
// a hit reads without taking the lock: the hot path of Seal and Open then
// costs a cheap hash, one atomic load and the key compared. The table's
// hash (frontHash) need not resist collisions: keys that share a slot take
// turns in it, and a miss there is a lookup in the map, whose hash is the
// runtime's seeded one; no key is evicted or re-derived because of a
// collision.
//
// An entry hit through the table is marked used instead of being moved to
// the front of the list; eviction moves marked entries to the front (and
// unmarks them) rather than dropping them. At most max entries are held;
// the table only points at held ones.
type aeadCache struct {
	seed  uint64
	front []atomic.Pointer[cacheEntry] // len is a power of two

	mu    sync.Mutex
	max   int
	n     int
	items map[cacheKey]*cacheEntry
	lru   cacheEntry // the list's sentinel: lru.next is the most recently used
}

type cacheEntry struct {
	hash       uint64
	key        cacheKey
	aead       cipher.AEAD
	used       atomic.Bool // hit through the table since it was last at the front
	prev, next *cacheEntry // the LRU list, guarded by the cache's mu

	// scratch is a buffer for the AAD of a version 2 record: 13 bytes
	// for its header and room for its record ID. One Seal or Open at a
	// time builds its AAD there, the one that sets busy; the others use a
	// pooled buffer.
	busy    atomic.Bool
	scratch []byte
}

func newAEADCache(max int) *aeadCache {
	if max < 1 {
		max = 1
	}
	n := 1
	for n < max && n < maxFront {
		n <<= 1
	}
	c := &aeadCache{
		seed:  rand.Uint64(),
		front: make([]atomic.Pointer[cacheEntry], n),
		max:   max,
		items: make(map[cacheKey]*cacheEntry),
	}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// hash is frontHash of k.
func (c *aeadCache) hash(k *cacheKey) uint64 {
	return c.frontHash(k.id, k.unbound, k.purpose, k.subject, k.session)
}

// frontHash picks a key's slot in the table: a seeded multiplicative mix
// of the key ID, the shape of the purpose and of the subject, and the
// session ID's length and first and last eight bytes (session IDs are
// random where they matter). It costs a few instructions, on the hot path
// of every Seal and Open; keys it does not tell apart share a slot.
func (c *aeadCache) frontHash(id keyschedule.KeyID, unbound bool, purpose, subject, session string) uint64 {
	const m = 0x9E3779B97F4A7C15 // odd: multiplying by it is a bijection
	h := c.seed ^ uint64(binary.BigEndian.Uint32(id[:]))<<32 ^ uint64(shape(purpose))<<16 ^ uint64(shape(subject))
	if unbound {
		h ^= 1 << 63
	}
	h = (h ^ uint64(len(session))) * m
	if n := len(session); n >= 8 {
		h = (h ^ load64(session)) * m
		h = (h ^ load64(session[n-8:])) * m
	} else {
		for i := range n {
			h = (h ^ uint64(session[i])) * m
		}
	}
	return h ^ h>>29
}

// load64 returns the first eight bytes of s, little-endian.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// shape sums up s in 16 bits: its length, first and last byte.
func shape(s string) uint16 {
	if s == "" {
		return 0
	}
	return uint16(len(s))<<10 ^ uint16(s[0])<<5 ^ uint16(s[len(s)-1])
}

func (c *aeadCache) slot(h uint64) *atomic.Pointer[cacheEntry] {
	return &c.front[h&uint64(len(c.front)-1)]
}

func (c *aeadCache) get(k cacheKey) *cacheEntry {
	return c.lookup(k.id, &Binding{Purpose: k.purpose, Subject: k.subject, SessionID: k.session, Unbound: k.unbound})
}

// lookup returns the entry of the key of secret id and binding b, or nil.
// The hit through the table, the path of every warm Seal and Open, builds
// no cacheKey and takes no lock.
func (c *aeadCache) lookup(id keyschedule.KeyID, b *Binding) *cacheEntry {
	h := c.frontHash(id, b.Unbound, b.Purpose, b.Subject, b.SessionID)
	slot := c.slot(h)
	if e := slot.Load(); e != nil && e.hash == h && e.isFor(id, b) {
		if !e.used.Load() {
			e.used.Store(true)
		}
		return e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[keyFor(id, b)]
	if !ok {
		return nil
	}
	c.toFront(e)
	e.used.Store(false)
	slot.Store(e)
	return e
}

// isFor reports whether e holds the key of secret id and binding b: the
// whole key compared, the session ID (which tells keys apart) first.
func (e *cacheEntry) isFor(id keyschedule.KeyID, b *Binding) bool {
	k := &e.key
	return k.session == b.SessionID && k.id == id && k.unbound == b.Unbound &&
		k.subject == b.Subject && k.purpose == b.Purpose
}

// put adds the AEAD a for k and returns its entry.
func (c *aeadCache) put(k cacheKey, a cipher.AEAD) *cacheEntry {
	e := newEntry(k, a)
	e.hash = c.hash(&e.key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[e.key]; ok {
		c.toFront(old)
		return old
	}
	c.items[e.key] = e
	c.n++
	c.toFront(e)
	c.slot(e.hash).Store(e)
	for c.n > c.max {
		last := c.lru.prev
		if last.used.Load() {
			last.used.Store(false) // a second chance
			c.toFront(last)
			continue
		}
		c.remove(last)
	}
	return e
}

// newEntry returns an entry for k holding a, with its scratch buffer
// ready. Its key's strings are cut from one new string, not kept as the
// caller's, which may be parts of larger ones. (Go concatenates a lone
// non-empty string without copying it: an unbound key keeps its purpose.)
func newEntry(k cacheKey, a cipher.AEAD) *cacheEntry {
	all := k.purpose + k.subject + k.session
	np, ns := len(k.purpose), len(k.subject)
	k.purpose, k.subject, k.session = all[:np], all[np:np+ns], all[np+ns:]
	return &cacheEntry{key: k, aead: a, scratch: make([]byte, HeaderSize, HeaderSize+64)}
}

// toFront moves e, which may be in the list or not, to its front. c.mu is
// held.
func (c *aeadCache) toFront(e *cacheEntry) {
	if c.lru.next == e {
		return
	}
	if e.next != nil {
		e.prev.next, e.next.prev = e.next, e.prev
	}
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

// remove drops e from the list, the index and the table. c.mu is held.
func (c *aeadCache) remove(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.items, e.key)
	c.n--
	c.slot(e.hash).CompareAndSwap(e, nil)
}

func (c *aeadCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// buildAAD returns the AAD of a record for b (which must be e's binding)
// with the given header: for version 2 in e's scratch buffer, or when
// another call holds it in a pooled one. Pass both results to releaseAAD.
func (e *cacheEntry) buildAAD(b *Binding, header []byte) (aad []byte, pooled *[]byte, err error) {
	if header[0] == version1 {
		pooled = aadBuffers.Get().(*[]byte)
		aad, err = b.appendAADV1((*pooled)[:0], header)
		return aad, pooled, err
	}
	if !e.busy.CompareAndSwap(false, true) {
		pooled = aadBuffers.Get().(*[]byte)
		aad = append(append((*pooled)[:0], header...), b.RecordID...)
		return aad, pooled, nil
	}
	aad = e.scratch
	*(*[HeaderSize]byte)(aad) = [HeaderSize]byte(header) // no call to memmove
	return append(aad, b.RecordID...), nil, nil
}

// releaseAAD gives the buffer of an AAD from buildAAD back. An AAD holds
// no secret, only the record's header and binding, which the entry keeps
// anyway: the entry's own buffer is not cleared, and a pooled one only so
// that it keeps no binding of an entry evicted since.
func (e *cacheEntry) releaseAAD(aad []byte, pooled *[]byte) {
	if pooled != nil {
		clear(aad)
		if cap(aad) <= 4096 {
			*pooled = aad[:0]
			aadBuffers.Put(pooled)
		}
		return
	}
	if cap(aad) != cap(e.scratch) && cap(aad) <= 4096 {
		// A long record ID moved the AAD to a larger buffer: keep it.
		// (Only then: storing a pointer costs a write barrier while the
		// GC runs.)
		e.scratch = aad[:len(e.scratch)]
	}
	e.busy.Store(false)
}

package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

func testAEAD(t *testing.T) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testKey(session string) cacheKey {
	b := Binding{Purpose: "pending", Subject: "alice", SessionID: session}
	return keyFor(keyschedule.KeyID{1, 2, 3, 4}, &b)
}

// A key whose slot in the table holds another key's entry is a miss
// there, never the other key's AEAD, and is found in the index.
func TestCacheCollision(t *testing.T) {
	c := newAEADCache(8)
	k1, k2 := testKey("s1"), testKey("s2")
	e1 := c.put(k1, testAEAD(t))
	c.slot(c.hash(&k2)).Store(e1) // k2's slot now holds k1's entry
	if e := c.get(k2); e != nil {
		t.Fatal("a colliding key got another key's entry")
	}
	e2 := c.put(k2, testAEAD(t))
	c.slot(c.hash(&k1)).Store(e2)
	c.slot(c.hash(&k2)).Store(e1)
	if c.get(k1) != e1 || c.get(k2) != e2 {
		t.Fatal("a key whose slot held another's was not found in the index")
	}
}

// Keys that share a slot of the table all stay cached: a cache larger
// than its table (which has at most maxFront slots) holds and finds every
// key, whatever their slots, and derives none again.
func TestCacheSharedSlots(t *testing.T) {
	const n = 3 * maxFront
	c := newAEADCache(n)
	entries := make(map[string]*cacheEntry, n)
	for i := range n {
		k := testKey(fmt.Sprint("session-", i))
		entries[k.session] = c.put(k, testAEAD(t))
	}
	for range 2 {
		for session, e := range entries {
			if c.get(testKey(session)) != e {
				t.Fatalf("%s: not found, or another entry", session)
			}
		}
	}
	if got := c.len(); got != n {
		t.Fatalf("cache holds %d entries, want %d", got, n)
	}
}

// Entries hit through the table get a second chance at eviction: a key in
// constant use survives a stream of new keys.
func TestCacheSecondChance(t *testing.T) {
	c := newAEADCache(4)
	hot := testKey("hot")
	e := c.put(hot, testAEAD(t))
	for i := range 100 {
		if c.get(hot) != e {
			t.Fatalf("the hot key was evicted after %d new keys", i)
		}
		c.put(testKey(fmt.Sprint("cold-", i)), testAEAD(t))
		if n := c.len(); n > 4 {
			t.Fatalf("cache holds %d entries, max 4", n)
		}
	}
	// The table never points at an entry the cache dropped.
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.front {
		if e := c.front[i].Load(); e != nil && c.items[e.key] != e {
			t.Fatalf("table slot %d holds an evicted entry", i)
		}
	}
}

// Many goroutines sealing and opening for more sessions than the cache
// holds, a few sharing each session (and so an entry's AAD buffer): every
// record opens. Run with -race.
func TestCacheConcurrent(t *testing.T) {
	secret, err := keyschedule.New([]byte("a secret of thirty-two bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(secret, nil, WithCacheSize(16))
	if err != nil {
		t.Fatal(err)
	}
	expiry := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				b := Binding{Purpose: "pending", Subject: "u", SessionID: fmt.Sprint("s", (g+i)%40), RecordID: fmt.Sprint("r", i)}
				sealed, err := s.Seal(b, []byte("hello"), expiry)
				if err != nil {
					t.Error(err)
					return
				}
				if pt, err := s.Open(b, sealed); err != nil || string(pt) != "hello" {
					t.Errorf("open: %q, %v", pt, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := CacheLen(s); n > 16 {
		t.Fatalf("cache holds %d entries, max 16", n)
	}
}

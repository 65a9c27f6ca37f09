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

// A key whose hash collides with a cached one's is a miss, never the other
// key's AEAD, through the table and through the index alike.
func TestCacheCollision(t *testing.T) {
	c := newAEADCache(8)
	k1, k2 := testKey("s1"), testKey("s2")
	e1 := c.put(k1, testAEAD(t))
	// Make k2's hash k1's: plant k1's entry where k2 is looked up.
	h2 := c.hash(&k2)
	c.mu.Lock()
	c.items[h2] = e1
	c.mu.Unlock()
	c.slot(h2).Store(e1)
	if e := c.get(k2); e != nil {
		t.Fatal("a colliding key got another key's entry")
	}
	if e := c.get(k1); e != e1 {
		t.Fatal("the cached key is lost")
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
		if e := c.front[i].Load(); e != nil && c.items[e.hash] != e {
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

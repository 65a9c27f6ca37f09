package envelope

import (
	"container/list"
	"crypto/cipher"
	"sync"
)

// aeadCache is a bounded LRU of derived AEADs, keyed by key ID || HKDF info.
// It holds expanded AES keys in memory, never secrets or plaintexts.
type aeadCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order list.List // front = most recently used
}

type cacheEntry struct {
	key  string
	aead cipher.AEAD
}

func newAEADCache(max int) *aeadCache {
	if max < 1 {
		max = 1
	}
	return &aeadCache{max: max, items: make(map[string]*list.Element)}
}

func (c *aeadCache) get(k []byte) cipher.AEAD {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[string(k)] // no allocation for the lookup
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).aead
}

func (c *aeadCache) put(k string, a cipher.AEAD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&cacheEntry{key: k, aead: a})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

func (c *aeadCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

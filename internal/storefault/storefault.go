// Package storefault holds store.Store wrappers of the tests: Lossy loses
// replies and fails reads on demand, as a network partition does;
// CountGets counts reads.
package storefault

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// ErrLost is the error of a write whose reply Lossy dropped, and of a read
// it failed.
var ErrLost = errors.New("connection reset")

// Lossy applies every PutIfAbsent and CompareAndSwap, then reports it
// failed while Drop is set (the write reached the store, its reply was
// lost); its Gets fail while Blind is set.
type Lossy struct {
	store.Store
	Drop, Blind atomic.Bool
}

// PutIfAbsent implements store.Store.
func (l *Lossy) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	ok, err := l.Store.PutIfAbsent(ctx, k, v, e)
	if l.Drop.Load() {
		return false, ErrLost
	}
	return ok, err
}

// CompareAndSwap implements store.Store.
func (l *Lossy) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	ok, err := l.Store.CompareAndSwap(ctx, k, old, v, e)
	if l.Drop.Load() {
		return false, ErrLost
	}
	return ok, err
}

// Get implements store.Store.
func (l *Lossy) Get(ctx context.Context, k string) ([]byte, error) {
	if l.Blind.Load() {
		return nil, ErrLost
	}
	return l.Store.Get(ctx, k)
}

// CountGets counts the Get calls of its Store.
type CountGets struct {
	store.Store
	Gets atomic.Int64
}

// Get implements store.Store.
func (c *CountGets) Get(ctx context.Context, k string) ([]byte, error) {
	c.Gets.Add(1)
	return c.Store.Get(ctx, k)
}

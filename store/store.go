// Package store defines the storage contract elicitvault's backends
// implement.
//
// An Elicitor takes a Store of any backend; nodes that share one share
// their elicitations:
//
//	st, err := redis.New(ctx, "redis://localhost:6379/0", nil) // or memory.New(nil), postgres.New
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer st.Close()
//	ev, err := elicit.New(keys, st, nil)
//
// A store holds opaque keys and opaque values. Callers pass keys that are
// already blinded (keyed HMACs) and values that are already sealed: a store
// never sees a session ID, a subject or a plaintext, and this package and its
// backends import none of the crypto packages, so that holds by
// construction.
//
// Every write carries an absolute expiry; an expired entry reads as absent.
// Backend errors are returned wrapped, never swallowed. After Close every
// operation returns [ErrClosed].
//
// A backend is a [Driver] of raw operations; every backend returns it
// wrapped by [New] in a Store, which does what all backends must do alike
// (argument checks, closed state, errors named by operation, subscription
// buffers), as gocloud.dev's portable types do over their drivers.
//
// Publish/subscribe loses messages on every real backend. A result is
// therefore always written to the store before it is announced, and a
// waiter subscribes before it asks, then reads the store again after every
// message, after every (re)subscription, and every few seconds while
// nothing comes: a lost message (or a writer that died before it
// published) delays nothing longer than the next read.
package store

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrNotFound is returned when a key is absent or expired.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidArgument is returned for an empty key or channel, a nil value
	// where one is required, or an expiry that is zero or already past.
	ErrInvalidArgument = errors.New("store: invalid argument")
)

// Store is the contract every backend implements. Implementations are safe
// for concurrent use.
type Store interface {
	// Put writes value under key until expiry, replacing any entry.
	Put(ctx context.Context, key string, value []byte, expiry time.Time) error

	// Get returns the value under key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)

	// Take atomically reads and deletes the value under key. Among
	// concurrent takers of one key exactly one gets the value; the others
	// get ErrNotFound.
	Take(ctx context.Context, key string) ([]byte, error)

	// PutIfAbsent writes value under key only if no live entry exists, and
	// reports whether it did. Among concurrent callers exactly one wins.
	PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error)

	// Swap atomically replaces the entry under key and returns the value it
	// replaced, or nil when there was none.
	Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error)

	// CompareAndSwap replaces the entry under key with value only if the
	// entry's current value equals old, and reports whether it did. A nil
	// value deletes the entry (compare-and-delete). A missing or expired
	// entry never matches.
	CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error)

	// Delete removes the entry under key. Deleting a missing key is not an
	// error.
	Delete(ctx context.Context, key string) error

	// Scan returns up to count live entries after cursor, and the cursor for
	// the next call; "" starts a scan and a returned "" ends it. Entries
	// written during a scan may or may not be returned; an entry present for
	// the whole scan is returned at least once.
	Scan(ctx context.Context, cursor string, count int) ([]Entry, string, error)

	// Publish sends msg to the current subscribers of channel. Delivery is
	// best effort.
	Publish(ctx context.Context, channel string, msg []byte) error

	// Subscribe subscribes to channel. It returns once the subscription is
	// active, so a message published after it returns can be delivered.
	Subscribe(ctx context.Context, channel string) (Subscription, error)

	// Close releases the store's resources and ends every subscription.
	Close() error
}

// Entry is one stored entry, as returned by Scan.
type Entry struct {
	Key    string
	Value  []byte
	Expiry time.Time
}

// Subscription delivers the messages of one channel.
type Subscription interface {
	// Messages delivers the messages published on the channel. It is closed
	// when the subscription ends, by Close, by the store's Close, or by a
	// failure the backend cannot recover from (then Err says why).
	Messages() <-chan Message

	// Err returns the error that ended the subscription, or nil.
	Err() error

	// Close ends the subscription and releases its resources. It is safe to
	// call more than once.
	Close() error
}

// Message is one delivery on a subscription.
type Message struct {
	// Data is the published payload; nil when Resubscribed is set.
	Data []byte
	// Resubscribed reports that the backend lost and regained the
	// subscription: messages may have been lost, so the subscriber must read
	// the store again.
	Resubscribed bool
}

// checkWriteArgs validates the arguments of a write.
func checkWriteArgs(key string, value []byte, expiry time.Time, now time.Time) error {
	if key == "" || value == nil || expiry.IsZero() || !expiry.After(now) {
		return ErrInvalidArgument
	}
	return nil
}

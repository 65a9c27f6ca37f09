// Package oneshot lets exactly one request, among the processes that share
// a store, use something up (a token, an answer), without losing it to a
// store fault.
//
// A use has two steps. Claim takes the marker for a while (a lease), for
// one request, which the caller identifies by a fingerprint (a keyed hash
// of what the request carries). Commit, when the work the use protects has
// happened (or is certain to), marks it used for good; Release gives it
// back after a failure. A claim that is neither committed nor released (a
// node died, or the store became unreachable between the steps) is taken
// over by the next request once its lease ends: a marker never stays used
// for a use that did not happen. Finish keeps a sealed result with a used
// marker, so that a resend of the same request (same fingerprint) gets the
// result back instead of a refusal, and the work is not done twice.
//
// Writes carry a random owner value: a write that a client library retried
// after a lost reply (applied twice, or applied and reported as failed) is
// recognised as the claimer's own.
//
// The marker's value is not a sealed record: whoever controls the store
// can delete or rewrite it and so make a use happen again. Callers that
// need more must not trust storage for it.
package oneshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

var (
	// ErrUsed is returned by Claim when the marker was used by another
	// request, or by this one without a kept result.
	ErrUsed = errors.New("oneshot: already used")
	// ErrBusy is returned by Claim while another request holds the marker
	// under a live lease: it may succeed or fail; try again after the
	// lease.
	ErrBusy = errors.New("oneshot: being used by another request")
	// ErrLost is returned by Commit when the claim's lease ended and
	// another request took the marker over: the work must not happen.
	ErrLost = errors.New("oneshot: the claim was taken over after its lease")
)

// Replayed is returned by Claim (as the error) when the marker was used by
// a request with the same fingerprint and a result was kept: Result is
// what Finish stored.
type Replayed struct {
	Result []byte
}

func (r *Replayed) Error() string { return "oneshot: the same request was already completed" }

// Is makes a *Replayed match ErrUsed.
func (r *Replayed) Is(target error) bool { return target == ErrUsed }

// The marker's encoding: magic, state, owner, lease end (Unix ms),
// fingerprint length and fingerprint, then the result.
const (
	magic   = 0x6F // 'o': neither a sealed record (0xE1) nor a bare 0x01
	claimed = 'c'
	used    = 'u'
	ownerN  = 16
	header  = 2 + ownerN + 8 + 1
)

type marker struct {
	state byte
	owner [ownerN]byte
	until int64
	fp    []byte
	res   []byte
}

func (m *marker) encode() []byte {
	b := make([]byte, 0, header+len(m.fp)+len(m.res))
	b = append(b, magic, m.state)
	b = append(b, m.owner[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(m.until))
	b = append(b, byte(len(m.fp)))
	b = append(b, m.fp...)
	return append(b, m.res...)
}

func decode(b []byte) (*marker, bool) {
	if len(b) < header || b[0] != magic || (b[1] != claimed && b[1] != used) {
		return nil, false
	}
	m := &marker{state: b[1]}
	copy(m.owner[:], b[2:])
	m.until = int64(binary.BigEndian.Uint64(b[2+ownerN:]))
	n := int(b[header-1])
	if len(b) < header+n {
		return nil, false
	}
	m.fp = b[header : header+n]
	m.res = b[header+n:]
	if m.state == claimed && len(m.res) != 0 {
		return nil, false
	}
	return m, true
}

// IsMarker reports whether v is a marker's value, for tools that tell
// markers from records.
func IsMarker(v []byte) bool {
	_, ok := decode(v)
	return ok
}

// Claimed reports whether v is a marker claimed and not (yet) used.
func Claimed(v []byte) bool {
	m, ok := decode(v)
	return ok && m.state == claimed
}

// Use is a claimed marker. Exactly one of Commit or Release should
// follow; a claim left alone ends with its lease.
type Use struct {
	st     store.Store
	key    string
	expiry time.Time
	m      marker
	val    []byte // the marker's current value, as this claim wrote it

	read   []byte // Options.Read's value, read after the claim's write
	readOK bool   // read was read so
}

// Read returns the value under Options.Read (nil when there was none) as
// the store held it after the claim's write, and whether the claim read
// it so: it reads it only with its write, and only from a store that
// does both in one operation (the Store of store.New: PutIfAbsentGet). When it
// did not, a caller that needs it reads it now.
func (c *Use) Read() ([]byte, bool) { return c.read, c.readOK }

// Options are the parameters of Claim.
type Options struct {
	// Lease is how long the claim holds the marker before another request
	// may take it over. It must cover the work between Claim and Commit.
	Lease time.Duration
	// Expiry is when the marker expires: at least as late as whatever it
	// guards can still be presented.
	Expiry time.Time
	// Now is the current time (time.Now when nil).
	Now func() time.Time
	// Read, when not empty, is a key that the claim reads in the same
	// store operation as its write, after it: see Use.Read.
	Read string
}

// putIfAbsentGetter is the PutIfAbsentGet of the Store of store.New, which is not part
// of store.Store.
type putIfAbsentGetter interface {
	PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error)
}

// putIfAbsent writes the claim's value under its key if absent, reading
// o.Read with it when the store can.
func (c *Use) putIfAbsent(ctx context.Context, o Options) (bool, error) {
	g, ok := c.st.(putIfAbsentGetter)
	if o.Read == "" || !ok {
		return c.st.PutIfAbsent(ctx, c.key, c.val, c.expiry)
	}
	won, v, err := g.PutIfAbsentGet(ctx, c.key, c.val, c.expiry, o.Read)
	if err == nil {
		c.read, c.readOK = v, true
	}
	return won, err
}

// Claim claims the marker under key for the request fingerprinted fp (at
// most 255 bytes). It returns the claim, or ErrBusy, ErrUsed, a *Replayed,
// store.ErrInvalidArgument (the expiry has passed) or a wrapped store
// error.
func Claim(ctx context.Context, st store.Store, key string, fp []byte, o Options) (*Use, error) {
	if len(fp) > 255 || o.Lease <= 0 {
		return nil, errors.New("oneshot: fingerprint too long or lease not positive")
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	c := &Use{st: st, key: key, expiry: o.Expiry, m: marker{state: claimed, fp: bytes.Clone(fp)}}
	rand.Read(c.m.owner[:])
	for range 4 {
		c.m.until = now().Add(o.Lease).UnixMilli()
		c.val = c.m.encode()
		c.read, c.readOK = nil, false // read only with this write
		won, err := c.putIfAbsent(ctx, o)
		if errors.Is(err, store.ErrInvalidArgument) {
			return nil, err
		}
		if err != nil {
			// The write may have been applied and its reply lost (a
			// client library may also have retried it): the owner value
			// tells.
			if cur, gerr := st.Get(ctx, key); gerr == nil && bytes.Equal(cur, c.val) {
				return c, nil
			}
			return nil, fmt.Errorf("oneshot: %w", err)
		}
		if won {
			return c, nil
		}
		cur, err := st.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // released or expired meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("oneshot: %w", err)
		}
		if bytes.Equal(cur, c.val) {
			// Our own write, retried by the client library after a lost
			// reply: the retry found the first attempt's value.
			return c, nil
		}
		m, ok := decode(cur)
		switch {
		case !ok:
			return nil, ErrUsed // not ours to interpret: fail closed
		case m.state == used && len(m.res) > 0 && bytes.Equal(m.fp, fp):
			return nil, &Replayed{Result: bytes.Clone(m.res)}
		case m.state == used:
			return nil, ErrUsed
		case m.until > now().UnixMilli():
			return nil, ErrBusy
		}
		// An abandoned claim: take it over. What the write read came
		// before the takeover: the caller reads it again.
		c.read, c.readOK = nil, false
		c.m.until = now().Add(o.Lease).UnixMilli()
		c.val = c.m.encode()
		ok, err = st.CompareAndSwap(ctx, key, cur, c.val, o.Expiry)
		if err == nil && ok {
			return c, nil
		}
		if now2, gerr := st.Get(ctx, key); gerr == nil && bytes.Equal(now2, c.val) {
			return c, nil // applied, its reply lost or its retry refused
		}
		if err != nil {
			return nil, fmt.Errorf("oneshot: %w", err)
		}
	}
	return nil, ErrBusy
}

// Commit marks the claim's marker used for good. After ErrLost or a store
// error the work must not happen (and the caller should Release).
func (c *Use) Commit(ctx context.Context) error {
	m := c.m
	m.state = used
	m.until = 0
	return c.replace(ctx, m.encode())
}

// Finish keeps result (sealed by the caller: the store reads it) with a
// committed marker, for Claim to hand to a resend of the same request.
// It is best effort: without it, a resend gets ErrUsed.
func (c *Use) Finish(ctx context.Context, result []byte) error {
	if c.val[1] != used {
		return errors.New("oneshot: Finish before Commit")
	}
	m := c.m
	m.state = used
	m.until = 0
	m.res = result
	return c.replace(ctx, m.encode())
}

// Release gives an uncommitted claim back, best effort: a claim not
// released ends with its lease.
func (c *Use) Release(ctx context.Context) error {
	if c.val[1] != claimed {
		return errors.New("oneshot: Release after Commit")
	}
	_, err := c.st.CompareAndSwap(ctx, c.key, c.val, nil, c.expiry)
	return err
}

// replace swaps the marker's value from what this claim wrote to v. When
// the swap's outcome is unknown (a store error; or a refusal, which a
// client library's retry of an applied swap also gives), it reads the
// marker back until it knows: v is there (the swap was applied, its reply
// lost), this claim's value is still there (it was not: swap again), or
// anything else (ErrLost). A store that does not answer is read again with
// a growing delay until ctx ends (or maxWait has passed), since a commit
// that happened must be recognised as such: the work it protects runs only
// on that answer.
func (c *Use) replace(ctx context.Context, v []byte) error {
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	delay := 20 * time.Millisecond
	for range maxSwaps {
		ok, err := c.st.CompareAndSwap(ctx, c.key, c.val, v, c.expiry)
		if err == nil && ok {
			c.val = v
			return nil
		}
		cur, gerr := c.st.Get(ctx, c.key)
		for gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
			if werr := sleep(ctx, delay); werr != nil {
				if err == nil {
					err = gerr
				}
				return fmt.Errorf("oneshot: outcome unknown: %w", errors.Join(err, werr))
			}
			delay = min(2*delay, time.Second)
			cur, gerr = c.st.Get(ctx, c.key)
		}
		switch {
		case gerr == nil && bytes.Equal(cur, v):
			c.val = v
			return nil
		case gerr == nil && bytes.Equal(cur, c.val):
			// Not applied: the marker is still this claim's, and the
			// store answers again: swap again.
		default:
			return ErrLost
		}
	}
	return fmt.Errorf("oneshot: the marker did not change in %d swaps", maxSwaps)
}

// maxSwaps bounds the swaps replace sends while the marker is still the
// claim's value, and maxWait how long it waits for a store that does not
// answer.
const (
	maxSwaps = 8
	maxWait  = 30 * time.Second
)

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lookup returns the result kept with the used marker under key for the
// request fingerprinted fp, or ErrUsed (used otherwise, or no result),
// store.ErrNotFound (no marker) or a wrapped store error.
func Lookup(ctx context.Context, st store.Store, key string, fp []byte) ([]byte, error) {
	cur, err := st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("oneshot: %w", err)
	}
	m, ok := decode(cur)
	if !ok || m.state != used || len(m.res) == 0 || !bytes.Equal(m.fp, fp) {
		return nil, ErrUsed
	}
	return bytes.Clone(m.res), nil
}

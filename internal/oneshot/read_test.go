package oneshot_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// lostReply is a store of store.New whose PutIfAbsentGet applies the write and
// then reports it failed (a reply lost) while lose is set.
type lostReply struct {
	store.Store
	lose bool
}

type putIfAbsentGetter interface {
	PutIfAbsentGet(ctx context.Context, k string, v []byte, e time.Time, other string) (bool, []byte, error)
}

func (l *lostReply) PutIfAbsentGet(ctx context.Context, k string, v []byte, e time.Time, other string) (bool, []byte, error) {
	ok, got, err := l.Store.(putIfAbsentGetter).PutIfAbsentGet(ctx, k, v, e, other)
	if l.lose {
		return false, nil, errors.New("connection reset")
	}
	return ok, got, err
}

// A claim with Options.Read reads that key with its write, from a store
// that can, and says so only when the read came after its own write: not
// after a lost reply, nor after taking over an abandoned claim.
func TestClaimRead(t *testing.T) {
	ctx := context.Background()
	st := &lostReply{Store: memory.New(nil)}
	defer st.Close()
	exp := time.Now().Add(time.Minute)
	if err := st.Put(ctx, "other", []byte("v1"), exp); err != nil {
		t.Fatal(err)
	}
	o := oneshot.Options{Lease: time.Minute, Expiry: exp, Read: "other"}

	c, err := oneshot.Claim(ctx, st, "a", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Read(); !ok || !bytes.Equal(v, []byte("v1")) {
		t.Fatalf("Read = %q, %v; want v1, true", v, ok)
	}

	o2 := o
	o2.Read = "missing"
	c, err = oneshot.Claim(ctx, st, "b", nil, o2)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Read(); !ok || v != nil {
		t.Fatalf("Read of a missing key = %q, %v; want nil, true", v, ok)
	}

	// The write applied, its reply lost: the claim is ours, the read is
	// not known.
	st.lose = true
	c, err = oneshot.Claim(ctx, st, "c", nil, o)
	st.lose = false
	if err != nil {
		t.Fatalf("claim with a lost reply: %v", err)
	}
	if v, ok := c.Read(); ok {
		t.Fatalf("Read after a lost reply = %q, true; want false", v)
	}

	// An abandoned claim taken over: what the write read came before.
	now := time.Now()
	old := o
	old.Lease = time.Millisecond
	if _, err := oneshot.Claim(ctx, st, "d", nil, old); err != nil {
		t.Fatal(err)
	}
	later := o
	later.Now = func() time.Time { return now.Add(time.Second) }
	c, err = oneshot.Claim(ctx, st, "d", nil, later)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	if v, ok := c.Read(); ok {
		t.Fatalf("Read after a takeover = %q, true; want false", v)
	}

	// A store without PutIfAbsentGet: no read.
	c, err = oneshot.Claim(ctx, struct{ store.Store }{st}, "e", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Read(); ok {
		t.Fatal("Read on a store without PutIfAbsentGet reports a read")
	}
}

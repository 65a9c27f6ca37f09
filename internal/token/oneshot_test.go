package token_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// lossy applies every write, then reports it failed while drop is set (a
// reply lost in a partition); reads fail while blind is set.
type lossy struct {
	store.Store
	drop, blind atomic.Bool
}

func (l *lossy) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	ok, err := l.Store.PutIfAbsent(ctx, k, v, e)
	if l.drop.Load() {
		return false, errors.New("i/o timeout")
	}
	return ok, err
}

func (l *lossy) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	ok, err := l.Store.CompareAndSwap(ctx, k, old, v, e)
	if l.drop.Load() {
		return false, errors.New("i/o timeout")
	}
	return ok, err
}

func (l *lossy) Get(ctx context.Context, k string) ([]byte, error) {
	if l.blind.Load() {
		return nil, errors.New("i/o timeout")
	}
	return l.Store.Get(ctx, k)
}

// A marker write that reached the store but whose reply was lost is the
// consumer's own: the consumption succeeds instead of failing and leaving
// every resend refused as replayed.
func TestConsumeLostReply(t *testing.T) {
	st := &lossy{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	s := service(t, keyring(t, nil, secretA), st)
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	st.drop.Store(true)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); err != nil {
		t.Fatalf("consume with a lost reply: %v", err)
	}
	st.drop.Store(false)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("second consume: %v", err)
	}
}

// A consumption that failed half-way (the marker written, nothing readable)
// does not use the token up: after the claim's lease a resend succeeds,
// once.
//
// It runs in a synctest bubble: the default lease passes on the bubble's
// clock, at once.
func TestConsumeAfterPartition(t *testing.T) {
	synctest.Test(t, testConsumeAfterPartition)
}

func testConsumeAfterPartition(t *testing.T) {
	st := &lossy{Store: memory.New(nil)}
	defer st.Close()
	s, err := token.NewService(keyring(t, nil, secretA), st)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	st.drop.Store(true)
	st.blind.Store(true)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); err == nil {
		t.Fatal("consumed without a store")
	}
	st.drop.Store(false)
	st.blind.Store(false)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrInProgress) {
		t.Fatalf("during the lease: %v", err)
	}
	time.Sleep(token.DefaultClaimLease + time.Millisecond)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); err != nil {
		t.Fatalf("resend after the lease: %v", err)
	}
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("after use: %v", err)
	}
}

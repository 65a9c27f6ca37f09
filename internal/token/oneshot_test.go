package token_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elicitvault/elicitvault/internal/storefault"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store/memory"
)

// A marker write that reached the store but whose reply was lost is the
// consumer's own: the consumption succeeds instead of failing and leaving
// every resend refused as replayed.
func TestConsumeLostReply(t *testing.T) {
	st := &storefault.Lossy{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	s := service(t, keyring(t, nil, secretA), st)
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	st.Drop.Store(true)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); err != nil {
		t.Fatalf("consume with a lost reply: %v", err)
	}
	st.Drop.Store(false)
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
	st := &storefault.Lossy{Store: memory.New(nil)}
	defer st.Close()
	s, err := token.NewService(keyring(t, nil, secretA), st)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := issue(t, s, typical(token.URL), token.Compact)
	st.Drop.Store(true)
	st.Blind.Store(true)
	if _, err := s.Consume(context.Background(), tok, token.Expect{Kind: token.URL}); err == nil {
		t.Fatal("consumed without a store")
	}
	st.Drop.Store(false)
	st.Blind.Store(false)
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

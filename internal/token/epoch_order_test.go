package token_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// forgetful is a store that loses all its data at the moment a one-shot
// claim reaches it, while armed: the claim's write and whatever is read
// after it see an empty store, whatever was read before it saw the old
// one. It counts the store's Gets.
type forgetful struct {
	store.Store
	t     *testing.T
	armed atomic.Bool
	gets  atomic.Int64
}

func (f *forgetful) forget() {
	if f.armed.CompareAndSwap(true, false) {
		flush(f.t, f.Store)
	}
}

func (f *forgetful) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	f.forget()
	return f.Store.PutIfAbsent(ctx, k, v, e)
}

func (f *forgetful) Get(ctx context.Context, k string) ([]byte, error) {
	f.gets.Add(1)
	return f.Store.Get(ctx, k)
}

// forgetfulPortable is forgetful with the claim and the epoch read in one
// operation, as the Store of store.New offers it.
type forgetfulPortable struct{ *forgetful }

func (f forgetfulPortable) PutIfAbsentGet(ctx context.Context, k string, v []byte, e time.Time, other string) (bool, []byte, error) {
	f.forget()
	return f.Store.(interface {
		PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error)
	}).PutIfAbsentGet(ctx, k, v, e, other)
}

// The store's epoch is read after the one-shot claim (in the same store
// operation when the store can): a store that loses its data exactly when
// the replay of a used token claims its marker refuses the replay, on a
// node whose cache still holds the old epoch. Reading the epoch before the
// claim, or not at all (trusting the cache), accepts it.
func TestEpochReadAfterClaim(t *testing.T) {
	for _, combined := range []bool{true, false} {
		name := map[bool]string{true: "one operation", false: "two operations"}[combined]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := &forgetful{Store: memory.New(nil), t: t}
			t.Cleanup(func() { f.Close() })
			var st store.Store = f
			if combined {
				st = forgetfulPortable{f}
			}
			var changes atomic.Int32
			a, b := node(t, st, &changes), node(t, st, &changes)
			tok, _ := issue(t, a, typical(token.RequestState), token.Compact)
			want := token.Expect{Kind: token.RequestState}
			if _, err := b.Verify(tok, want); err != nil { // b caches the epoch
				t.Fatal(err)
			}
			gets := f.gets.Load()
			if _, err := a.Consume(ctx, tok, want); err != nil {
				t.Fatal(err)
			}
			if n := f.gets.Load() - gets; combined && n != 0 {
				t.Errorf("a first use read the store %d times besides the claim: the epoch is not read with the claim", n)
			}
			f.armed.Store(true)
			_, err := b.Consume(ctx, tok, want)
			if f.armed.Load() {
				t.Fatal("the replay never claimed the marker")
			}
			if !errors.Is(err, token.ErrStoreReset) {
				t.Fatalf("replay of a used token, the store forgetting at its claim: %v; want ErrStoreReset", err)
			}
			// And the store's new epoch serves new tokens.
			tok2, _ := issue(t, b, typical(token.RequestState), token.Compact)
			if _, err := a.Consume(ctx, tok2, want); err != nil {
				t.Fatalf("token of the new epoch: %v", err)
			}
		})
	}
}

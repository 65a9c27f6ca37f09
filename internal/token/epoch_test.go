package token_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/storefault"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// flush empties st, as a Redis restarted without persistence or a
// FLUSHDB does.
func flush(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	cursor := ""
	for {
		entries, next, err := st.Scan(ctx, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := st.Delete(ctx, e.Key); err != nil {
				t.Fatal(err)
			}
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

// node is one process: its own watcher of the shared store.
func node(t *testing.T, st store.Store, changes *atomic.Int32) *token.Service {
	t.Helper()
	w := epoch.NewWatcher(st, epoch.Options{OnChange: func(epoch.Change) { changes.Add(1) }})
	s, err := token.NewService(keyring(t, nil, secretA), st, token.WithEpoch(w))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A store that forgot its one-shot markers does not make a used token
// usable again, in either format and for every kind: not on the node that
// saw the loss, not on a node whose cached epoch is still the old one,
// not on a node started after the loss.
func TestStoreResetRefusesUsedTokens(t *testing.T) {
	for _, f := range []token.Format{token.Compact, token.JWE} {
		for _, k := range token.Kinds {
			t.Run(f.String()+"/"+string(k), func(t *testing.T) {
				ctx := context.Background()
				st := memory.New(nil)
				t.Cleanup(func() { st.Close() })
				var changes atomic.Int32
				a, b := node(t, st, &changes), node(t, st, &changes)
				tok, _ := issue(t, a, typical(k), f)
				if f == token.Compact && !strings.HasPrefix(tok, "ev2.") {
					t.Fatalf("compact token with an epoch is not version 2: %.8s", tok)
				}
				want := token.Expect{Kind: k}
				if _, err := a.Consume(ctx, tok, want); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Verify(tok, want); err != nil { // b caches the epoch
					t.Fatal(err)
				}
				flush(t, st)

				// b's cache still holds the old epoch: Verify passes,
				// the claim's read of the store refuses.
				if _, err := b.Consume(ctx, tok, want); !errors.Is(err, token.ErrStoreReset) || !errors.Is(err, token.ErrReplayed) {
					t.Fatalf("replay on a node with a stale cache: %v", err)
				}
				for name, s := range map[string]*token.Service{"a": a, "b": b, "new": node(t, st, &changes)} {
					if _, err := s.Consume(ctx, tok, want); !errors.Is(err, token.ErrStoreReset) {
						t.Fatalf("replay on node %s: %v", name, err)
					}
				}
				if n := changes.Load(); n != 2 {
					t.Fatalf("%d changes reported, want one per node that knew the old epoch (2)", n)
				}
				// What is issued now works, once.
				tok2, _ := issue(t, b, typical(k), f)
				if _, err := a.Consume(ctx, tok2, want); err != nil {
					t.Fatalf("token of the new epoch: %v", err)
				}
				if _, err := b.Consume(ctx, tok2, want); !errors.Is(err, token.ErrReplayed) || errors.Is(err, token.ErrStoreReset) {
					t.Fatalf("second use of a new token: %v", err)
				}
			})
		}
	}
}

// The version of a compact token is authenticated: an ev2 token relabelled
// ev1 (or the reverse) does not open.
func TestCompactVersionBound(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	var changes atomic.Int32
	s2 := node(t, st, &changes)
	s1 := service(t, keyring(t, nil, secretA), st)
	for _, k := range token.Kinds {
		v2, _ := issue(t, s2, typical(k), token.Compact)
		v1, _ := issue(t, s1, typical(k), token.Compact)
		if !strings.HasPrefix(v1, "ev1.") {
			t.Fatalf("a service without an epoch issued %.4s", v1)
		}
		for _, s := range []*token.Service{s1, s2} {
			if _, err := s.Verify("ev1."+v2[4:], token.Expect{Kind: k}); !errors.Is(err, token.ErrInvalid) {
				t.Fatalf("ev2 relabelled ev1: %v", err)
			}
			if _, err := s.Verify("ev2."+v1[4:], token.Expect{Kind: k}); !errors.Is(err, token.ErrInvalid) {
				t.Fatalf("ev1 relabelled ev2: %v", err)
			}
		}
		// Version 1 still verifies (a rolling upgrade), and version 2
		// on a service that watches no epoch.
		if _, err := s2.Verify(v1, token.Expect{Kind: k}); err != nil {
			t.Fatalf("ev1 on a service with an epoch: %v", err)
		}
		if _, err := s1.Verify(v2, token.Expect{Kind: k}); err != nil {
			t.Fatalf("ev2 on a service without an epoch: %v", err)
		}
	}
}

// A store that cannot be read when the epoch must be confirmed leaves the
// token unused: a resend once the store is back succeeds, once.
func TestEpochReadFailureLeavesTokenUsable(t *testing.T) {
	ctx := context.Background()
	st := &storefault.Lossy{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	var changes atomic.Int32
	s := node(t, st, &changes)
	tok, _ := issue(t, s, typical(token.RequestState), token.Compact)
	st.Blind.Store(true)
	if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.RequestState}); err == nil || errors.Is(err, token.ErrReplayed) {
		t.Fatalf("consume with the epoch unreadable: %v", err)
	}
	st.Blind.Store(false)
	if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.RequestState}); err != nil {
		t.Fatalf("resend: %v", err)
	}
	if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.RequestState}); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("third use: %v", err)
	}
}

// Once a node knows an epoch is over, replays of its tokens cost the store
// nothing: a flood of old tokens after a loss is refused from memory, on a
// node that saw the loss and on one that learnt it from a token.
func TestOldEpochRefusedWithoutStoreReads(t *testing.T) {
	ctx := context.Background()
	st := &storefault.CountGets{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	var changes atomic.Int32
	a := node(t, st, &changes)
	tok, _ := issue(t, a, typical(token.RequestState), token.Compact)
	flush(t, st)
	b := node(t, st, &changes) // starts after the loss: never knew the old epoch
	for name, s := range map[string]*token.Service{"a": a, "b": b} {
		if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.RequestState}); !errors.Is(err, token.ErrStoreReset) {
			t.Fatalf("node %s: %v", name, err)
		}
		before := st.Gets.Load()
		for range 100 {
			if _, err := s.Consume(ctx, tok, token.Expect{Kind: token.RequestState}); !errors.Is(err, token.ErrStoreReset) {
				t.Fatalf("node %s: %v", name, err)
			}
		}
		if n := st.Gets.Load() - before; n != 0 {
			t.Fatalf("node %s: 100 replays of an old token read the store %d times", name, n)
		}
	}
}

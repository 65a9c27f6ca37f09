package elicit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// partitioned applies the next PutIfAbsent and reports it failed, and
// fails the reads that follow until healed: a partition that starts
// after the marker's write reached the store.
type partitioned struct {
	store.Store
	armed, cut atomic.Bool
}

func (p *partitioned) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	ok, err := p.Store.PutIfAbsent(ctx, k, v, e)
	if p.armed.CompareAndSwap(true, false) {
		p.cut.Store(true)
		return false, errors.New("read tcp: i/o timeout")
	}
	return ok, err
}

func (p *partitioned) Get(ctx context.Context, k string) ([]byte, error) {
	if p.cut.Load() {
		return nil, errors.New("read tcp: i/o timeout")
	}
	return p.Store.Get(ctx, k)
}

func (p *partitioned) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	if p.cut.Load() {
		return false, errors.New("read tcp: i/o timeout")
	}
	return p.Store.CompareAndSwap(ctx, k, old, v, e)
}

// The same answer sent again (its reply lost) gets the tool's result again,
// marked as a replay; the tool does not run twice. Another answer is
// refused.
func TestModelResendGetsSameResult(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		runs := e.counted("profile")
		cs := e.connect(mute, version)
		p := pendingOf(t, callTool(t, cs, "profile", nil))
		answer := map[string]any{"name": "Ann", "email": "ann@example.com"}
		first := submit(t, cs, p.ID, "accept", answer)
		if first.IsError {
			t.Fatalf("first: %q", text(first))
		}
		again := submit(t, cs, p.ID, "accept", map[string]any{"email": "ann@example.com", "name": "Ann"})
		if again.IsError || text(again) != text(first) || again.Meta[elicit.MetaElicitationReplayed] != true {
			t.Fatalf("the same answer again: %q %v (error %v)", text(again), again.Meta, again.IsError)
		}
		if other := submit(t, cs, p.ID, "accept", map[string]any{"name": "Bob", "email": "bob@example.com"}); !other.IsError {
			t.Fatalf("another answer: %q", text(other))
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("handler ran %d times, want 2", n)
		}
	})
}

// A partition right after the marker's write: the answer fails with a
// store error and is not used up; resent after the claim's lease, it
// continues the tool, once.
func TestModelAnswerAfterPartition(t *testing.T) {
	defer elicit.SetClaimLease(200 * time.Millisecond)()
	st := &partitioned{Store: memory.New()}
	t.Cleanup(func() { st.Close() })
	keys := newKeyring(t)
	ev, err := elicit.New((*keyring.Keyring)(keys), st, llmConfig)
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	e := &env{t: t, store: st, keys: keys, ev: ev, server: s}
	runs := e.counted("profile")
	cs := e.connect(mute, legacy)
	p := pendingOf(t, callTool(t, cs, "profile", nil))
	answer := map[string]any{"name": "Ann", "email": "ann@example.com"}
	st.armed.Store(true)
	res, err := cs.CallTool(context.Background(), fallbackParams(p.ID, answer))
	if err == nil && !res.IsError {
		t.Fatalf("answered during a partition: %q", text(res))
	}
	st.cut.Store(false)
	res = submit(t, cs, p.ID, "accept", answer)
	if !res.IsError || !strings.Contains(text(res), elicit.ErrAnswerInProgress.Error()) {
		t.Fatalf("during the lease: %q", text(res))
	}
	time.Sleep(250 * time.Millisecond)
	res = submit(t, cs, p.ID, "accept", answer)
	if res.IsError {
		t.Fatalf("resent after the partition: %q", text(res))
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
}

func fallbackParams(id string, content map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{"elicitId": id, "action": "accept", "content": content}}
}

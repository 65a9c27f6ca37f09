package elicit_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// opLog records the store operations that pass through it, and the
// events the test adds, in order (TestStoreOpsPerElicitation counts them).
type opLog struct {
	store.Store
	mu  sync.Mutex
	log []string
}

func (l *opLog) add(s string) {
	l.mu.Lock()
	l.log = append(l.log, s)
	l.mu.Unlock()
}

func (l *opLog) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

func (l *opLog) Put(ctx context.Context, k string, v []byte, e time.Time) error {
	l.add("put")
	return l.Store.Put(ctx, k, v, e)
}
func (l *opLog) Get(ctx context.Context, k string) ([]byte, error) {
	l.add("get")
	return l.Store.Get(ctx, k)
}
func (l *opLog) Take(ctx context.Context, k string) ([]byte, error) {
	l.add("take")
	return l.Store.Take(ctx, k)
}
func (l *opLog) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	l.add("putIfAbsent")
	return l.Store.PutIfAbsent(ctx, k, v, e)
}
func (l *opLog) PutIfAbsentGet(ctx context.Context, k string, v []byte, e time.Time, other string) (bool, []byte, error) {
	l.add("putIfAbsentGet")
	return l.Store.(interface {
		PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error)
	}).PutIfAbsentGet(ctx, k, v, e, other)
}
func (l *opLog) Swap(ctx context.Context, k string, v []byte, e time.Time) ([]byte, error) {
	l.add("swap")
	return l.Store.Swap(ctx, k, v, e)
}
func (l *opLog) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	l.add("compareAndSwap")
	return l.Store.CompareAndSwap(ctx, k, old, v, e)
}
func (l *opLog) Delete(ctx context.Context, k string) error {
	l.add("delete")
	return l.Store.Delete(ctx, k)
}
func (l *opLog) Publish(ctx context.Context, ch string, m []byte) error {
	l.add("publish")
	return l.Store.Publish(ctx, ch, m)
}
func (l *opLog) Subscribe(ctx context.Context, ch string) (store.Subscription, error) {
	l.add("subscribe")
	return l.Store.Subscribe(ctx, ch)
}

// TestModelAnswerRunsToolRightAfterCommit checks that an LLM-mediated
// answer, once its one-shot marker is committed, continues the tool before
// any other store work: the cleanup that follows is optional, and a node
// that dies (or a store that goes away) during it must not have kept the
// tool from running after the answer was used up.
func TestModelAnswerRunsToolRightAfterCommit(t *testing.T) {
	l := &opLog{Store: memory.New(nil)}
	defer l.Close()
	e := newEnvOn(t, l, llmConfig, newKeyring(t))
	e.tool("confirm", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		ok, err := elicit.Confirm(ctx, "Go on?")
		if err == nil {
			l.add("tool continued")
		}
		if ok {
			return "yes", err
		}
		return "no", err
	})
	cs := e.connect(mute, legacy)
	p := pendingOf(t, callTool(t, cs, "confirm", nil))
	before := len(l.events())
	if res := submit(t, cs, p.ID, "accept", map[string]any{"confirm": true}); res.IsError || text(res) != "yes" {
		t.Fatalf("continued: %q", text(res))
	}
	ev2 := l.events()[before:]
	// The claim (put-if-absent), its commit (compare-and-swap), then the
	// tool.
	i := slices.Index(ev2, "putIfAbsent")
	if i < 0 || i+2 >= len(ev2) || ev2[i+1] != "compareAndSwap" || ev2[i+2] != "tool continued" {
		t.Fatalf("after the answer: %v; want the claim, the commit, then the tool", ev2)
	}
	e.assertEmpty()
}

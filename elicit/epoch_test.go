package elicit_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// flushStore empties st, as a Redis restarted without persistence does.
func flushStore(t *testing.T, st store.Store) {
	t.Helper()
	for {
		entries, _, err := st.Scan(context.Background(), "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			return
		}
		for _, en := range entries {
			if err := st.Delete(context.Background(), en.Key); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A store that lost its data while a 2026-07-28 elicitation waited for its
// answer: the answer's round is refused (its requestState's one-shot
// marker may be gone), the tool does not run on it, the node logs the
// loss once, without a session ID, and calls Hooks.StoreReset; the next
// call works.
func TestStoreResetRefusesPendingRound(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	var logs lockedBuffer
	var resets atomic.Int32
	ev, err := elicit.New((*keyring.Keyring)(newKeyring(t)), st, &elicit.Config{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Hooks:  []elicit.Hooks{{StoreReset: func(context.Context) { resets.Add(1) }}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	var runs atomic.Int32
	flushNext := atomic.Bool{}
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, req, "Delete 3 contacts?")
		if err != nil {
			if flushNext.CompareAndSwap(true, false) {
				flushStore(t, st) // between the question and its answer
			}
			return nil, nil, err
		}
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ok)}}}, struct{}{}, nil
	})
	yes := elicittest.Accept(map[string]any{"confirm": true})
	if r := elicittest.CallAt(t, s, "2026-07-28", "confirm", nil, yes); r.Err != nil || runs.Load() != 1 {
		t.Fatalf("first call: %v, %d runs", r.Err, runs.Load())
	}
	flushNext.Store(true)
	r := elicittest.CallAt(t, s, "2026-07-28", "confirm", nil, yes)
	if r.Err == nil || runs.Load() != 1 {
		t.Fatalf("an answer whose requestState predates the loss was taken: %v, %d runs", r.Err, runs.Load())
	}
	if resets.Load() != 1 || strings.Count(logs.String(), "the store lost its data") != 1 {
		t.Fatalf("%d StoreReset calls; log:\n%s", resets.Load(), logs.String())
	}
	if r := elicittest.CallAt(t, s, "2026-07-28", "confirm", nil, yes); r.Err != nil || runs.Load() != 2 {
		t.Fatalf("call after the loss: %v, %d runs", r.Err, runs.Load())
	}
	if strings.Contains(logs.String(), "ev2.") || strings.Contains(logs.String(), "session") {
		t.Fatalf("the log says too much:\n%s", logs.String())
	}
	t.Logf("log: %s", logs.String())
}

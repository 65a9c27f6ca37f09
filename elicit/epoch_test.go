package elicit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	var logs fronttest.LockedBuffer
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
		ok, err := elicit.Confirm(ctx, "Delete 3 contacts?")
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
	h := ev.Handler(s, nil)
	if r := elicittest.CallAt(t, h, "2026-07-28", "confirm", nil, yes); r.Err != nil || runs.Load() != 1 {
		t.Fatalf("first call: %v, %d runs", r.Err, runs.Load())
	}
	flushNext.Store(true)
	r := elicittest.CallAt(t, h, "2026-07-28", "confirm", nil, yes)
	if r.Err == nil || runs.Load() != 1 {
		t.Fatalf("an answer whose requestState predates the loss was taken: %v, %d runs", r.Err, runs.Load())
	}
	if resets.Load() != 1 || strings.Count(logs.String(), "the store lost its data") != 1 {
		t.Fatalf("%d StoreReset calls; log:\n%s", resets.Load(), logs.String())
	}
	if r := elicittest.CallAt(t, h, "2026-07-28", "confirm", nil, yes); r.Err != nil || runs.Load() != 2 {
		t.Fatalf("call after the loss: %v, %d runs", r.Err, runs.Load())
	}
	if strings.Contains(logs.String(), "ev2.") || strings.Contains(logs.String(), "session") {
		t.Fatalf("the log says too much:\n%s", logs.String())
	}
	t.Logf("log: %s", logs.String())
}

// A consent-page link answered before the store lost its data, answered
// again after: the page tells the person to start again, never "Done",
// and the GET that shows it says the same without using anything.
func TestConsentPageAfterStoreLoss(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	e := newPageEnvOn(t, st, nil)
	// The answer after the loss is handed over to no one: the page waits
	// this long for a taker that cannot come.
	elicit.SetTakenWait(e.ev, 200*time.Millisecond)
	var link string
	got := e.call(t, legacy, func(u string) {
		link = u
		if p := fetch(t, "POST", u, url.Values{"action": {"accept"}}, nil); p.status != http.StatusOK {
			t.Errorf("answer: %d %s", p.status, p.title())
		}
	})
	if got != "accept" {
		t.Fatalf("the tool got %q", got)
	}
	flushStore(t, st)
	for _, method := range []string{"GET", "POST"} {
		p := fetch(t, method, link, url.Values{"action": {"accept"}}, nil)
		if p.status != http.StatusGone || p.title() != "This link can no longer be used" || !strings.Contains(p.body, "start again") {
			t.Fatalf("%s after the store lost its data: %d %q", method, p.status, p.title())
		}
	}
}

// A blocking URL-mode call still waiting when the store lost its records
// takes the answer the page of its own node is given (the token verifies;
// only its epoch is old), once: the page says Done, a second answer is
// told to start again.
func TestWaitingCallTakesAnswerAfterStoreLoss(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	e := newPageEnvOn(t, st, nil)
	var link string
	var first page
	visited := make(chan struct{})
	got := e.call(t, legacy, func(u string) {
		defer close(visited)
		link = u
		flushStore(t, st)
		first = fetch(t, "POST", u, url.Values{"action": {"accept"}}, nil)
	})
	<-visited
	if got != "accept" || first.status != http.StatusOK || first.title() != "Done" {
		t.Fatalf("the waiting call got %q; the page said %d %q", got, first.status, first.title())
	}
	p := fetch(t, "POST", link, url.Values{"action": {"decline"}}, nil)
	if p.status != http.StatusGone || p.title() != "This link can no longer be used" {
		t.Fatalf("second answer: %d %q", p.status, p.title())
	}
}

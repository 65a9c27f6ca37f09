package elicit_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 23: on 2026-07-28 the retry of a URL-mode round waits for the
// page at most Config.URLRoundWait, then answers "still waiting"; the
// consent page says "Done" only when the call took the answer.

const roundWait = 50 * time.Millisecond

var (
	accepted  = &mcp.ElicitResult{Action: "accept"}
	connect   = &mcp.CallToolParams{Name: "connect"}
	h1        = regexp.MustCompile(`<h1>([^<]*)</h1>`)
	titleDone = "Done"
	saved     = "Answer saved"
)

// answerPage posts a choice on the consent page and returns the status
// and the title of the page that answers.
func answerPage(t *testing.T, u, choice string) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, url.Values{"action": {choice}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := h1.FindSubmatch(body)
	if m == nil {
		t.Fatalf("page without a title: %s", body)
	}
	return resp.StatusCode, string(m[1])
}

// roundsEnv is a server whose URL-mode rounds wait roundWait, with a
// client that drives the rounds by hand and the tool "connect".
func roundsEnv(t *testing.T) (*env, *manual, *atomic.Int32) {
	e := newEnv(t, &elicit.Config{URLRoundWait: roundWait})
	elicit.SetTakenWait(e.ev, 100*time.Millisecond)
	srv := e.callback()
	var runs atomic.Int32
	link := urlTool(srv.URL)
	e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		return link(ctx, req)
	})
	m := e.manualBoth()
	return e, m, &runs
}

// linkOfInput returns the link of a URL-mode input request.
func linkOfInput(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	for _, ir := range res.InputRequests {
		if p, ok := ir.(*mcp.ElicitParams); ok && p.Mode == "url" && p.URL != "" {
			return p.URL
		}
	}
	t.Fatalf("no URL-mode input request in %+v", res)
	return ""
}

// checkStillWaiting fails t unless res is "still waiting": input required,
// no input request (an empty map, which the go-sdk client needs), and a
// requestState other than prev.
func checkStillWaiting(t *testing.T, res *mcp.CallToolResult, prev string) {
	t.Helper()
	if !res.NeedsInput() || res.InputRequests == nil || len(res.InputRequests) != 0 ||
		res.RequestState == "" || res.RequestState == prev || len(res.Content) != 0 {
		t.Fatalf("got %+v (text %q), want still waiting with a new requestState", res, text(res))
	}
}

// An answer given between two rounds is kept for the next: the page says
// that nothing took it yet, and the next retry returns it at once.
func TestURLRoundAnswerBetweenRounds(t *testing.T) {
	e, m, _ := roundsEnv(t)
	first := m.call(connect)
	link := linkOfInput(t, first)
	start := time.Now()
	r1 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: first.RequestState, InputResponses: m.respond(first, accepted)})
	checkStillWaiting(t, r1, first.RequestState)
	if d := time.Since(start); d < roundWait {
		t.Errorf("still waiting after %v, want after the round's wait %v", d, roundWait)
	}
	if status, title := answerPage(t, link, "accept"); status != http.StatusOK || title != saved {
		t.Errorf("page between rounds: %d %q, want 200 %q", status, title, saved)
	}
	r2 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: r1.RequestState})
	if r2.NeedsInput() || text(r2) != "accept" {
		t.Fatalf("the round after the answer: %+v (%q), want accept", r2, text(r2))
	}
	e.assertEmpty()
}

// After two "still waiting" results (the go-sdk client's limit), the next
// retry waits until the TTL; an answer then reaches it, and the page says
// "Done".
func TestURLRoundsThenHold(t *testing.T) {
	e, m, _ := roundsEnv(t)
	first := m.call(connect)
	link := linkOfInput(t, first)
	r1 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: first.RequestState, InputResponses: m.respond(first, accepted)})
	checkStillWaiting(t, r1, first.RequestState)
	r2 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: r1.RequestState})
	checkStillWaiting(t, r2, r1.RequestState)
	held := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect", RequestState: r2.RequestState})
		if err != nil {
			t.Error(err)
		}
		held <- res
	}()
	select {
	case res := <-held:
		t.Fatalf("the third retry returned %+v (%q), want it to wait for the page", res, text(res))
	case <-time.After(3 * roundWait):
	}
	if status, title := answerPage(t, link, "accept"); status != http.StatusOK || title != titleDone {
		t.Errorf("page during a round: %d %q, want 200 %q", status, title, titleDone)
	}
	select {
	case res := <-held:
		if res == nil || res.NeedsInput() || text(res) != "accept" {
			t.Fatalf("the third retry: %+v, want accept", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the third retry did not return after the page")
	}
	e.assertEmpty()
}

// The requestState of a "still waiting" result is like any other: bound
// to the call, tamper-evident and usable once (-32602 otherwise, before
// the handler runs).
func TestStillWaitingStateRefused(t *testing.T) {
	e, m, runs := roundsEnv(t)
	other := &manual{t, e.connect(&mcp.ClientOptions{Capabilities: bothModes, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, mrtr)}
	first := m.call(connect)
	r1 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: first.RequestState, InputResponses: m.respond(first, accepted)})
	checkStillWaiting(t, r1, first.RequestState)

	refused := func(name string, cs *mcp.ClientSession, p *mcp.CallToolParams) {
		t.Helper()
		badState(t, runs, name, cs, p)
	}
	st := r1.RequestState
	refused("the round's own requestState again", m.cs, &mcp.CallToolParams{Name: "connect", RequestState: first.RequestState, InputResponses: m.respond(first, accepted)})
	refused("another session", other.cs, &mcp.CallToolParams{Name: "connect", RequestState: st})
	refused("other arguments", m.cs, &mcp.CallToolParams{Name: "connect", Arguments: map[string]any{"n": 1}, RequestState: st})
	refused("tampered", m.cs, &mcp.CallToolParams{Name: "connect", RequestState: st[:len(st)-1] + map[bool]string{true: "B", false: "A"}[st[len(st)-1] == 'A']})

	// The refusals used nothing up: the real one goes on waiting, once.
	r2 := m.call(&mcp.CallToolParams{Name: "connect", RequestState: st})
	checkStillWaiting(t, r2, st)
	refused("replayed", m.cs, &mcp.CallToolParams{Name: "connect", RequestState: st})
}

// The go-sdk client, which fails a call at its third "still waiting" in a
// row, completes a call whose page is answered after the rounds' waits.
func TestURLRoundsGoSDKClient(t *testing.T) {
	e := newEnv(t, &elicit.Config{URLRoundWait: roundWait})
	srv := e.callback()
	e.tool("connect", urlTool(srv.URL))
	links := make(chan string, 1)
	cs := e.connect(&mcp.ClientOptions{Capabilities: bothModes, ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		links <- req.Params.URL
		return accepted, nil
	}}, mrtr)
	pages := make(chan string, 1)
	go func() {
		link := <-links
		time.Sleep(4 * roundWait) // past two rounds' waits: the third retry holds
		_, title := answerPage(t, link, "accept")
		pages <- title
	}()
	if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
		t.Fatalf("got %q (error %v), want accept", got, isErr)
	}
	if title := <-pages; title != titleDone {
		t.Errorf("page: %q, want %q", title, titleDone)
	}
	e.assertEmpty()
}

// Before 2026-07-28 the call waits for the page in elicitation/create's
// wake: an answer given before the client's reply is held until the reply
// comes, and the page does not say "Done" for it; one given while the
// call waits does.
func TestURLBlockingPageSaysDoneOnlyWhenTaken(t *testing.T) {
	for _, early := range []bool{true, false} {
		e := newEnv(t, nil)
		elicit.SetTakenWait(e.ev, 100*time.Millisecond)
		srv := e.callback()
		e.tool("connect", urlTool(srv.URL))
		titles := make(chan string, 1)
		cs := e.connect(&mcp.ClientOptions{Capabilities: bothModes, ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if early {
				_, title := answerPage(t, req.Params.URL, "accept")
				titles <- title
			} else {
				go func() {
					time.Sleep(20 * time.Millisecond)
					_, title := answerPage(t, req.Params.URL, "accept")
					titles <- title
				}()
			}
			return accepted, nil
		}}, legacy)
		if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
			t.Fatalf("early=%v: got %q", early, got)
		}
		want := map[bool]string{true: saved, false: titleDone}[early]
		if title := <-titles; title != want {
			t.Errorf("early=%v: page %q, want %q", early, title, want)
		}
		e.assertEmpty()
	}
}

// With -32042 the answer waits for the client's retry: the page says
// "Done" when the retry comes in time, and that the answer is saved when
// it does not.
func TestURLRequiredPageSaysDoneOnlyWhenTaken(t *testing.T) {
	for _, retry := range []bool{true, false} {
		e := newEnv(t, nil)
		elicit.SetTakenWait(e.ev, map[bool]time.Duration{true: 5 * time.Second, false: 100 * time.Millisecond}[retry])
		cs, el, complete := urlRequiredCall(t, e)
		titles := make(chan string, 1)
		go func() {
			_, title := answerPage(t, el.URL, "accept")
			titles <- title
		}()
		if retry {
			select {
			case <-complete:
			case <-time.After(5 * time.Second):
				t.Fatal("no completion notification")
			}
			if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
				t.Errorf("retry: %q", got)
			}
		}
		want := map[bool]string{true: titleDone, false: saved}[retry]
		if title := <-titles; title != want {
			t.Errorf("retry=%v: page %q, want %q", retry, title, want)
		}
		if !retry {
			if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
				t.Errorf("late retry: %q", got)
			}
		}
		e.assertEmpty()
	}
}

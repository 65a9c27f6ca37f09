package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/elicitvault/elicitvault/store/memory"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// longRoundsEnv, set to 1, runs TestURLRoundsOutliveClientTimeouts at
// issue 23's size: the default round wait (20 s), the TypeScript SDK's
// default timeout (60 s) and the user's Accept at 70 s (scripts/rounds).
// Otherwise it runs scaled down: rounds of 1 s, a timeout of 3 s, Accept
// at 4 s, which keep the same order.
const longRoundsEnv = "ELICITVAULT_LONG_ROUNDS"

// TestURLRoundsOutliveClientTimeouts (issue 23): on 2026-07-28 the user
// accepts on the consent page after the client's request timeout has
// passed, with the client of the TypeScript SDK v2 on its default timeout
// and without a progress handler, and with the go-sdk client, against
// the go-sdk front-end and the mcp-go one. The call completes: the
// retries of the URL-mode round answer "still waiting" before the timeout
// (on mcp-go, with the inputRequests {} that mcp-go drops put back), and
// the page says "Done".
func TestURLRoundsOutliveClientTimeouts(t *testing.T) {
	roundWait, accept, tsTimeout := time.Second, 4*time.Second, any(3000)
	if os.Getenv(longRoundsEnv) == "1" {
		roundWait, accept, tsTimeout = 0, 70*time.Second, "default"
	}
	for _, sdk := range []string{"go-sdk", "mcp-go"} {
		t.Run(sdk, func(t *testing.T) {
			t.Parallel()
			urlRoundsOutlive(t, newRoundsServer(t, sdk, roundWait), accept, tsTimeout)
		})
	}
}

// newRoundsServer returns the address of a server on sdk (go-sdk or
// mcp-go) with the tool connect_account, which asks for a URL-mode
// elicitation and returns the action, and URL-mode rounds of roundWait.
func newRoundsServer(t *testing.T, sdk string, roundWait time.Duration) string {
	t.Helper()
	ev, srv := newRoundsElicitor(t, roundWait)
	connect := func(ctx context.Context) (string, error) {
		action, err := elicit.URL(ctx, "Connect your Example account")
		return string(action), err
	}
	if sdk == "mcp-go" {
		m := mgserver.NewMCPServer("rounds", "1")
		front := mcpgo.New(ev, m, nil)
		addMGTextTool(m, "connect_account", connect)
		srv.Config.Handler = front.Handler(nil)
	} else {
		s := mcp.NewServer(&mcp.Implementation{Name: "rounds", Version: "1"}, nil)
		ev.Install(s)
		addTextTool(s, "connect_account", connect)
		srv.Config.Handler = ev.Handler(s, nil)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// urlRoundsOutlive calls connect_account at base with both clients, and
// accepts on the page at accept after the call started.
func urlRoundsOutlive(t *testing.T, base string, accept time.Duration, tsTimeout any) {
	// acceptLater answers the page of link at accept after start, and
	// sends the title of the page that answers.
	acceptLater := func(start time.Time, link string) <-chan string {
		title := make(chan string, 1)
		go func() {
			// The person answers after the client's real timeout, in
			// another process (Node): real time is the subject, so the
			// sleep stays (CONTRIBUTING.md).
			time.Sleep(time.Until(start.Add(accept)))
			resp, err := http.PostForm(link, url.Values{"action": {"accept"}})
			if err != nil {
				title <- err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			m := regexp.MustCompile(`<h1>([^<]*)</h1>`).FindSubmatch(body)
			if m == nil {
				title <- string(body)
				return
			}
			title <- string(m[1])
		}()
		return title
	}
	checkPage := func(t *testing.T, title <-chan string) {
		t.Helper()
		if got := <-title; got != "Done" {
			t.Errorf("the consent page says %q after Accept, want Done", got)
		}
	}
	limit := accept + 30*time.Second

	t.Run("typescript-v2", func(t *testing.T) {
		t.Parallel()
		c := startV2At(t, base+elicit.MCPPath, "2026-07-28", map[string]any{"url": map[string]any{}}, tsTimeout)
		start := time.Now()
		reply := c.call("connect_account", map[string]any{})
		var title <-chan string
		select {
		case ev := <-c.events:
			if ev.Event != "elicit" || ev.Params == nil || ev.Params.Mode != "url" || ev.Params.URL == "" {
				t.Fatalf("got %+v, want the URL-mode input request", ev)
			}
			title = acceptLater(start, ev.Params.URL)
		case r := <-reply:
			t.Fatalf("the call returned %+v before asking", r)
		case <-time.After(30 * time.Second):
			t.Fatal("no input request within 30s")
		}
		select {
		case r := <-reply:
			if r.Err != nil || r.IsError || r.Text != "accept" {
				t.Fatalf("after %v: got %q (error %v, %+v), want accept", time.Since(start).Round(time.Second), r.Text, r.IsError, r.Err)
			}
		case <-time.After(limit):
			t.Fatalf("no outcome within %v", limit)
		}
		checkPage(t, title)
	})

	t.Run("go-sdk", func(t *testing.T) {
		t.Parallel()
		links := make(chan string, 1)
		client := mcp.NewClient(&mcp.Implementation{Name: "rounds-client", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				links <- req.Params.URL
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		ctx, cancel := context.WithTimeout(t.Context(), limit)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + elicit.MCPPath},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		start := time.Now()
		titles := make(chan (<-chan string), 1)
		go func() {
			select {
			case link := <-links:
				titles <- acceptLater(start, link)
			case <-ctx.Done():
			}
		}()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect_account"})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("after %v: got %+v, %v; want accept", time.Since(start).Round(time.Second), res, err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "accept" {
			t.Fatalf("got %+v, want accept", res.Content[0])
		}
		checkPage(t, <-titles)
	})
}

// newRoundsElicitor returns an Elicitor on a memory store whose URL-mode
// rounds wait roundWait, and the server, not started yet, whose address
// its pages are at: the caller sets its handler and starts it.
func newRoundsElicitor(t *testing.T, roundWait time.Duration) (*elicit.Elicitor, *httptest.Server) {
	t.Helper()
	keys := keysA(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	ev := newElicitor(t, keys, st, &elicit.Config{URLRoundWait: roundWait, BaseURL: "http://" + srv.Listener.Addr().String()})
	return ev, srv
}

package elicit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A blocking URL-mode call still waiting on node A when the store lost its
// records takes the answer given on node B's page (issue 24): B hands it
// over through the store's channel, A acknowledges, and only then does the
// page say "Done"; the call gets it at once, not at its TTL. A second
// answer finds no call to take it: the page tells the person to start
// again, never "Done".
func TestWaitingCallTakesAnswerFromOtherNode(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a := newPageEnvOn(t, st, nil)
	b := newPageEnvOn(t, st, nil)
	onB := func(link string) string {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = b.srv.Listener.Addr().String()
		return u.String()
	}
	var link string
	var first page
	visited := make(chan struct{})
	start := time.Now()
	got := a.call(t, legacy, func(u string) {
		defer close(visited)
		link = onB(u)
		flushStore(t, st)
		first = fetch(t, "POST", link, url.Values{"action": {"accept"}}, nil)
	})
	took := time.Since(start)
	<-visited
	if got != "accept" || first.status != http.StatusOK || first.title() != "Done" {
		t.Fatalf("the waiting call got %q after %v; the page said %d %q", got, took, first.status, first.title())
	}
	if took > 5*time.Second {
		t.Errorf("the waiting call took %v", took)
	}
	p := fetch(t, "POST", link, url.Values{"action": {"decline"}}, nil)
	if p.status != http.StatusGone || p.title() != "This link can no longer be used" {
		t.Fatalf("second answer: %d %q", p.status, p.title())
	}
}

// The same for -32042 (before 2026-07-28): the answer handed over to the
// node whose call returned -32042 is kept there for the client's retry,
// which takes it; the page said "Done" for an answer that is used.
func TestURLRequiredTakesAnswerFromOtherNode(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	var nodes [2]*httptest.Server
	for i := range nodes {
		srv := httptest.NewUnstartedServer(nil)
		k, err := keyring.New([]byte("pages test secret, thirty-two bytes long"))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := elicit.New(k, st, &elicit.Config{BaseURL: "http://" + srv.Listener.Addr().String(), TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ev.Close() })
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			a, err := elicit.URL(ctx, "Connect your account", elicit.WithURLElicitationRequiredError())
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(a)}}}, nil, nil
		})
		srv.Config.Handler = ev.Handler(s, nil)
		srv.Start()
		t.Cleanup(srv.Close)
		nodes[i] = srv
	}
	completed := make(chan struct{}, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		Capabilities: bothModes,
		ElicitationCompleteHandler: func(context.Context, *mcp.ElicitationCompleteNotificationRequest) {
			completed <- struct{}{}
		},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: nodes[0].URL + elicit.MCPPath}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "connect"})
	u, err := url.Parse(fronttest.URLRequired(t, err).URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = nodes[1].Listener.Addr().String()
	flushStore(t, st)
	if p := fetch(t, "POST", u.String(), url.Values{"action": {"accept"}}, nil); p.status != http.StatusOK || p.title() != "Done" {
		t.Fatalf("the page on the other node: %d %q", p.status, p.title())
	}
	select {
	case <-completed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/elicitation/complete")
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "connect"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "accept" {
		t.Fatalf("the retry: %v %v", err, res)
	}
}

// A held 2026-07-28 retry waiting for its page when the store lost its
// records cannot use an answer any more: its requestState's one-shot claim
// was lost with the store, and its round can neither commit it nor be
// sent again. A page answered then, on another node or on its own, tells
// the person to start again, never "Done".
func TestHeldRoundTakesNoHandedAnswer(t *testing.T) {
	for _, where := range []string{"other node", "same node"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel() // each call waits out its TTL
			st := memory.New(nil)
			t.Cleanup(func() { st.Close() })
			a := newPageEnvOn(t, st, nil)
			b := newPageEnvOn(t, st, nil)
			var first page
			visited := make(chan struct{})
			got := a.call(t, mrtr, func(link string) {
				defer close(visited)
				if where == "other node" {
					u, err := url.Parse(link)
					if err != nil {
						t.Error(err)
						return
					}
					u.Host = b.srv.Listener.Addr().String()
					link = u.String()
				}
				time.Sleep(200 * time.Millisecond) // the retry is held, waiting for the page
				flushStore(t, st)
				first = fetch(t, "POST", link, url.Values{"action": {"accept"}}, nil)
			})
			<-visited
			if first.status != http.StatusGone || first.title() != "This link can no longer be used" {
				t.Fatalf("the page said %d %q; the call got %q", first.status, first.title(), got)
			}
			if got == "accept" {
				t.Fatalf("the call got %q", got)
			}
		})
	}
}

package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/keyring"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var bothModes = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
	Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}

// callback serves e's callback handler.
func (e *env) callback() *httptest.Server {
	srv := httptest.NewServer(e.ev.Pages(nil))
	e.t.Cleanup(srv.Close)
	return srv
}

// get opens a URL-mode link and accepts on the page: the POST of the
// consent page's Accept button.
func get(t *testing.T, u string) int {
	t.Helper()
	return choose(t, u, "accept")
}

// choose posts a choice (accept or decline) on the consent page.
func choose(t *testing.T, u, choice string) int {
	t.Helper()
	if choice == "" {
		choice = "accept"
	}
	resp, err := http.PostForm(u, url.Values{"action": {choice}})
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// urlClient is a client that visits every URL it is sent: before it
// replies (early) or after.
type urlClient struct {
	t        *testing.T
	early    bool
	choice   string // on the page; accept when empty
	mu       sync.Mutex
	ids      []string // elicitation IDs sent
	complete chan string
	status   chan int
}

func newURLClient(t *testing.T, early bool) *urlClient {
	return &urlClient{t: t, early: early, complete: make(chan string, 4), status: make(chan int, 4)}
}

func (c *urlClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: bothModes,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			c.mu.Lock()
			c.ids = append(c.ids, req.Params.ElicitationID)
			c.mu.Unlock()
			if strings.Contains(req.Params.URL, "@") {
				c.t.Errorf("URL carries PII: %s", req.Params.URL)
			}
			if c.early {
				c.status <- choose(c.t, req.Params.URL, c.choice)
			} else {
				go func() {
					time.Sleep(20 * time.Millisecond)
					c.status <- choose(c.t, req.Params.URL, c.choice)
				}()
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			c.complete <- req.Params.ElicitationID
		},
	}
}

// otherNode returns a second Elicitor with keys and cfg on e's store
// (another process sharing it), and points the tool "connect" at its
// pages, served until the test ends.
func (e *env) otherNode(keys *ring.Keyring, cfg *elicit.Config) *elicit.Elicitor {
	e.t.Helper()
	other, err := elicit.New((*keyring.Keyring)(keys), e.store, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(other.Pages(nil))
	e.t.Cleanup(srv.Close)
	e.tool("connect", urlTool(srv.URL))
	return other
}

// acceptURL calls "connect" from a new URL-mode client at version that
// accepts on the page, fails the test unless the tool got "accept", and
// returns the status of the page's answer.
func (e *env) acceptURL(version string) int {
	e.t.Helper()
	c := newURLClient(e.t, false)
	cs := e.connect(c.options(), version)
	if got, isErr := call(e.t, cs, "connect"); isErr || got != "accept" {
		e.t.Fatalf("got %q", got)
	}
	return <-c.status
}

func urlTool(base string, opts ...elicit.Option) func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
	return func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		a, err := elicit.URL(ctx, "Connect your account", append(opts, elicit.WithLink(elicit.CallbackURL(base+"/cb")))...)
		return string(a), err
	}
}

func TestURLMode(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, early := range []bool{false, true} {
			e := newEnv(t, nil)
			elicit.SetTakenWait(e.ev, 100*time.Millisecond) // an early answer waits for the client's reply
			srv := e.callback()
			e.tool("connect", urlTool(srv.URL))
			c := newURLClient(t, early)
			cs := e.connect(c.options(), version)
			got, isErr := call(t, cs, "connect")
			if isErr || got != "accept" {
				t.Fatalf("early=%v: got %q", early, got)
			}
			if s := <-c.status; s != http.StatusOK {
				t.Errorf("callback status %d", s)
			}
			select {
			case id := <-c.complete:
				c.mu.Lock()
				if len(c.ids) != 1 || c.ids[0] != id {
					t.Errorf("completion for %q, elicitations %v", id, c.ids)
				}
				c.mu.Unlock()
			case <-time.After(2 * time.Second):
				t.Error("no notifications/elicitation/complete")
			}
			e.assertEmpty()
		}
	})
}

// Decline on the page is a completion too: the client is notified, on
// every path (blocking, input requests, -32042), so that a client waiting
// for notifications/elicitation/complete retries or moves on.
func TestURLDeclineOnPageNotifies(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, early := range []bool{false, true} {
			e := newEnv(t, nil)
			srv := e.callback()
			e.tool("connect", urlTool(srv.URL))
			c := newURLClient(t, early)
			c.choice = "decline"
			cs := e.connect(c.options(), version)
			if got, isErr := call(t, cs, "connect"); isErr || got != "decline" {
				t.Fatalf("early=%v: got %q", early, got)
			}
			if s := <-c.status; s != http.StatusOK {
				t.Errorf("page status %d", s)
			}
			select {
			case <-c.complete:
			case <-time.After(2 * time.Second):
				t.Errorf("early=%v: no notifications/elicitation/complete after Decline on the page", early)
			}
			e.assertEmpty()
		}
	})
	t.Run("-32042", func(t *testing.T) {
		e := newEnv(t, nil)
		// The retry gets the user's refusal.
		answerURLRequired(t, e, "decline")
		e.assertEmpty()
	})
}

func TestURLDecline(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		e.tool("connect", urlTool("http://127.0.0.1:1"))
		cs := e.connect(&mcp.ClientOptions{Capabilities: bothModes, ElicitationHandler: answer("decline", nil)}, version)
		if got, _ := call(t, cs, "connect"); got != "decline" {
			t.Errorf("got %q", got)
		}
		e.assertEmpty()
	})
}

func TestURLUnsupported(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		var got error
		e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			_, got = elicit.URL(ctx, "Connect", elicit.WithLink(elicit.CallbackURL("http://x/cb")))
			return "", nil
		})
		asked := false
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = true
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}, version) // form only
		call(t, cs, "connect")
		var ue *elicit.UnsupportedError
		if !errors.As(got, &ue) || ue.Mode != elicit.ModeURL || asked {
			t.Errorf("got %v (asked %v)", got, asked)
		}
	})
}

// The answer arrives on another node: a second Elicitor (another process)
// sharing the store serves the callback.
func TestURLAcrossNodes(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		e.otherNode(newKeyring(t), nil)
		if s := e.acceptURL(version); s != http.StatusOK {
			t.Errorf("callback status %d", s)
		}
		e.assertEmpty()
	})
}

// urlRequiredCall calls a tool that asks for a URL-mode elicitation with
// -32042, from a client that records its completion notifications, and
// returns the client, the elicitation of the error and the notifications.
func urlRequiredCall(t *testing.T, e *env) (*mcp.ClientSession, *mcp.ElicitParams, chan string) {
	t.Helper()
	srv := e.callback()
	e.tool("connect", urlTool(srv.URL, elicit.WithURLElicitationRequiredError()))
	complete := make(chan string, 1)
	cs := e.connect(&mcp.ClientOptions{
		Capabilities:       bothModes,
		ElicitationHandler: answer("accept", nil),
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			complete <- req.Params.ElicitationID
		},
	}, legacy)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect"})
	el := fronttest.URLRequired(t, err)
	if el.Mode != "url" || el.ElicitationID == "" || !strings.HasPrefix(el.URL, srv.URL+"/cb?token=ev2.") {
		t.Fatalf("elicitation %+v", el)
	}
	return cs, el, complete
}

// answerURLRequired makes the call of urlRequiredCall, answers its
// elicitation on the page with choice, waits for the elicitation's
// completion notification and checks that the retry gets choice. It
// returns the elicitation.
func answerURLRequired(t *testing.T, e *env, choice string) *mcp.ElicitParams {
	t.Helper()
	cs, el, complete := urlRequiredCall(t, e)
	if s := choose(t, el.URL, choice); s != http.StatusOK {
		t.Fatalf("page: %d", s)
	}
	select {
	case id := <-complete:
		if id != el.ElicitationID {
			t.Errorf("completion for another elicitation")
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("no notifications/elicitation/complete after %s on the page", choice)
	}
	if got, isErr := call(t, cs, "connect"); isErr || got != choice {
		t.Errorf("retry: %q, want %q", got, choice)
	}
	return el
}

func TestURLElicitationRequiredError(t *testing.T) {
	e := newEnv(t, nil)
	elicit.SetTakenWait(e.ev, 100*time.Millisecond) // nothing takes the answer before the retry
	// The retry finds the completed elicitation.
	el := answerURLRequired(t, e, "accept")
	// The link is single-use.
	if s := get(t, el.URL); s != http.StatusGone {
		t.Errorf("second callback: %d, want 410", s)
	}
	e.assertEmpty()
}

func TestURLCallbackBadInput(t *testing.T) {
	e := newEnv(t, nil)
	srv := e.callback()
	for _, q := range []string{"", "?token=", "?token=ev1.AAAA", "?token=ev2.AAAA", "?token=" + strings.Repeat("x", 100), "?token=a&token=b"} {
		if s := get(t, srv.URL+"/cb"+q); s != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", q, s)
		}
	}
	// A genuine token for an elicitation that does not exist (or belongs to
	// another session or subject): nothing is resolved, nothing written.
	ts, err := token.NewService(e.keys, e.store)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Issue(&token.Claims{Kind: token.URL, SessionID: "l:nobody", ElicitationID: "nothing"}, time.Minute, token.Compact)
	if err != nil {
		t.Fatal(err)
	}
	if s := get(t, elicit.CallbackURL(srv.URL+"/cb")(tok)); s != http.StatusGone {
		t.Errorf("unknown elicitation: %d, want 410", s)
	}
	err = elicit.ResolveURL(e.ev, context.Background(), &token.Claims{Kind: token.URL, SessionID: "l:nobody", ElicitationID: "nothing"}, elicit.Accept)
	if !errors.Is(err, elicit.ErrUnknownElicitation) || !errors.Is(err, token.ErrExpired) {
		t.Errorf("ResolveURL: %v", err)
	}
	e.assertEmpty()
}

// The error of WithURLElicitationRequiredError matches ErrInputRequired:
// a handler follows one rule for every error that asks the client (return
// it unchanged), as the mcp-go reference tools do.
func TestURLRequiredErrorMatchesInputRequired(t *testing.T) {
	e := newEnv(t, nil)
	srv := e.callback()
	matched := make(chan bool, 1)
	ask := urlTool(srv.URL, elicit.WithURLElicitationRequiredError())
	e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		a, err := ask(ctx, req)
		matched <- errors.Is(err, elicit.ErrInputRequired)
		return a, err
	})
	cs := e.connect(&mcp.ClientOptions{Capabilities: bothModes, ElicitationHandler: answer("accept", nil)}, legacy)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect"})
	fronttest.URLRequired(t, err)
	if !<-matched {
		t.Error("the -32042 error of URL does not match ErrInputRequired")
	}
}

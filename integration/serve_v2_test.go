//lint:file-ignore SA1019 the browser fallback announces the page through MCP logging, deprecated in 2026-07-28 but still delivered

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/webdriver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 20, items 11 to 13, with clients of the TypeScript SDK v2
// (@modelcontextprotocol/client, interop/elicit-client-v2.mjs) against
// `elicitvault serve`, and the user's choices made in a headless Chromium
// on the consent page.

// v2Client is one interop/elicit-client-v2.mjs process: one MCP client.
type v2Client struct {
	t      *testing.T
	stdin  io.WriteCloser
	events chan v2Event

	mu      sync.Mutex
	next    int
	replies map[int]chan v2Reply
}

type v2Event struct {
	Event         string          `json:"event"`
	Params        *v2Elicitation  `json:"params"`
	ElicitationID string          `json:"elicitationId"`
	ID            *int            `json:"id"`
	Result        json.RawMessage `json:"result"`
	Error         *v2Error        `json:"error"`
	Ready         bool            `json:"ready"`
}

type v2Elicitation struct {
	Mode          string `json:"mode"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

type v2Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Elicitations []v2Elicitation `json:"elicitations"`
	} `json:"data"`
}

// v2Reply is a tool call's outcome: its text, _meta.elicitationPending, or
// a JSON-RPC error.
type v2Reply struct {
	Text    string
	IsError bool
	Pending struct {
		ElicitID string `json:"elicitId"`
		URL      string `json:"url"`
	}
	Err *v2Error
}

// startV2 starts a client of serve at protocol version with the given
// elicitation capabilities (nil: none).
func startV2(t *testing.T, srv *serveProc, version string, elicitation map[string]any) *v2Client {
	t.Helper()
	return startV2At(t, srv.mcpURL(), version, elicitation, nil)
}

// startV2At is startV2 for the MCP endpoint mcpURL; timeout is each
// request's timeout in ms (nil: 60000; "default": the SDK's own).
func startV2At(t *testing.T, mcpURL, version string, elicitation map[string]any, timeout any) *v2Client {
	t.Helper()
	node, script := nodeScript(t, "elicit-client-v2.mjs", "@modelcontextprotocol/client")
	caps := map[string]any{}
	if elicitation != nil {
		caps["elicitation"] = elicitation
	}
	cfg, _ := json.Marshal(map[string]any{"url": mcpURL, "version": version, "capabilities": caps, "urlAction": "accept", "timeout": timeout})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, node, script, string(cfg))
	stdin, stdout, stderr := startPiped(t, cmd)
	c := &v2Client{t: t, stdin: stdin, events: make(chan v2Event, 16), replies: map[int]chan v2Reply{}}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev v2Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			switch {
			case ev.Ready:
				close(ready)
			case ev.ID != nil:
				c.mu.Lock()
				ch := c.replies[*ev.ID]
				c.mu.Unlock()
				ch <- c.reply(&ev)
			default:
				c.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		cancel()
		cmd.Wait()
	})
	select {
	case <-ready:
	case <-done:
		t.Fatalf("elicit-client-v2.mjs did not connect: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("elicit-client-v2.mjs did not connect within 30s")
	}
	return c
}

func (c *v2Client) reply(ev *v2Event) v2Reply {
	var r v2Reply
	if ev.Error != nil {
		r.Err = ev.Error
		return r
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
		Meta    struct {
			Pending json.RawMessage `json:"elicitationPending"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(ev.Result, &res); err != nil {
		c.t.Errorf("tool result %s: %v", ev.Result, err)
	}
	for _, p := range res.Content {
		r.Text += p.Text
	}
	r.IsError = res.IsError
	if res.Meta.Pending != nil {
		json.Unmarshal(res.Meta.Pending, &r.Pending)
	}
	return r
}

// call calls a tool and returns its outcome when it comes.
func (c *v2Client) call(tool string, args map[string]any) <-chan v2Reply {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan v2Reply, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"id": id, "tool": tool, "args": args})
	if _, err := fmt.Fprintf(c.stdin, "%s\n", line); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

// wait returns the outcome of a call.
func (c *v2Client) wait(ch <-chan v2Reply, what string) v2Reply {
	c.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no outcome of %s within 30s", what)
		panic("unreachable")
	}
}

// linkOf is the link a call's result hands to the model (the client has
// no URL mode), or fails t.
func linkOf(t *testing.T, r v2Reply, what string) (id, link string) {
	t.Helper()
	if r.Err != nil || r.IsError || r.Pending.ElicitID == "" || !strings.Contains(r.Pending.URL, elicit.PagesPrefix+"consent"+"?token=") {
		t.Fatalf("%s: got %q (error %v, %+v), want a link of its own for the user", what, r.Text, r.IsError, r.Err)
	}
	return r.Pending.ElicitID, r.Pending.URL
}

// acceptConnects accepts on the consent page at link; the call's text
// must then come on done within 30 seconds, and be connected.
func acceptConnects(t *testing.T, wd *webdriver.Driver, link string, done <-chan string) {
	t.Helper()
	choose(t, wd, link, "accept")
	select {
	case out := <-done:
		if out != connected {
			t.Fatalf("got %q, want %q", out, connected)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after Accept")
	}
}

// choose opens link in Chromium and clicks Accept or Decline on the
// consent page; it waits for the page that confirms the choice: "Done"
// (the call waiting for it took the answer) or "Declined".
func choose(t *testing.T, wd *webdriver.Driver, link, choice string) {
	t.Helper()
	chooseThen(t, wd, link, choice, map[string]string{"accept": "Done", "decline": "Declined"}[choice])
}

// chooseThen is choose for a page that answers with the title want: an
// answer that no call waits for (the model brings it) is "Answer saved".
func chooseThen(t *testing.T, wd *webdriver.Driver, link, choice, want string) {
	t.Helper()
	wd.Navigate(link)
	wd.Click(`button[value="` + choice + `"]`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := wd.Exec(`return document.querySelector("h1") && document.querySelector("h1").innerText`).(string)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consent page says %q after %s, want %q", got, choice, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	connected = "Your Example account is connected."
	declined  = "Not connected: you declined."
	// answerSaved is the title of the consent page after Accept when no
	// call took the answer (yet).
	answerSaved = "Answer saved"
)

// TestServeV2LinkAnswersOnlyItsCall: on 2026-07-28 without
// authentication, two clients of the TypeScript SDK v2 without URL mode
// (their models relay the link). A's user accepts on A's page; B, calling
// connect_account with the same arguments, is asked for its own link, not
// answered with A's choice (item 11). Two links of two calls of one client,
// opened before the next calls, answer none of them (item 12). Each
// answer reaches only sendElicitationResult with its own ID.
func TestServeV2LinkAnswersOnlyItsCall(t *testing.T) {
	wd := webdriver.Start(t)
	srv := startServe(t, nil)
	form := map[string]any{"form": map[string]any{}}
	a := startV2(t, srv, "2026-07-28", form)
	b := startV2(t, srv, "2026-07-28", form)
	args := map[string]any{}

	t.Run("another client", func(t *testing.T) {
		idA, linkA := linkOf(t, a.wait(a.call("connect_account", args), "A's call"), "A's call")
		chooseThen(t, wd, linkA, "accept", answerSaved)
		idB, _ := linkOf(t, b.wait(b.call("connect_account", args), "B's call"), "B's call, after A accepted")
		if idB == idA {
			t.Fatal("B was handed A's elicitation")
		}
		r := a.wait(a.call("sendElicitationResult", map[string]any{"elicitId": idA, "action": "accept"}), "A's answer")
		if r.Err != nil || r.IsError || r.Text != connected {
			t.Fatalf("A's sendElicitationResult: %q (error %v, %+v)", r.Text, r.IsError, r.Err)
		}
	})

	t.Run("leftover links", func(t *testing.T) {
		id1, link1 := linkOf(t, a.wait(a.call("connect_account", args), "call 1"), "call 1")
		id2, link2 := linkOf(t, a.wait(a.call("connect_account", args), "call 2"), "call 2")
		chooseThen(t, wd, link1, "accept", answerSaved)
		linkOf(t, a.wait(a.call("connect_account", args), "call 3"), "call 3, after link 1 was accepted")
		choose(t, wd, link2, "decline")
		linkOf(t, a.wait(a.call("connect_account", args), "call 4"), "call 4, after link 2 was declined")
		for _, c := range []struct{ id, want string }{{id1, connected}, {id2, declined}} {
			r := a.wait(a.call("sendElicitationResult", map[string]any{"elicitId": c.id, "action": "accept"}), "an answer")
			if r.Err != nil || r.IsError || r.Text != c.want {
				t.Errorf("sendElicitationResult: %q (error %v, %+v), want %q", r.Text, r.IsError, r.Err, c.want)
			}
		}
	})
}

// TestServeV2DeclineCompletes: Decline on the consent page sends
// notifications/elicitation/complete, as Accept does (item 13), to two
// 2025-11-25 clients of the TypeScript SDK v2: one whose call waits for the
// page (blocking URL mode), one that got -32042 and retries on the
// notification, and then gets the refusal. (On 2026-07-28 the call itself
// returns when the page is answered.)
func TestServeV2DeclineCompletes(t *testing.T) {
	wd := webdriver.Start(t)
	srv := startServe(t, nil)
	both := map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	blocking := startV2(t, srv, "2025-11-25", both)
	retrying := startV2(t, srv, "2025-11-25", both)

	completes := func(t *testing.T, c *v2Client, id string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case ev := <-c.events:
				if ev.Event == "complete" && ev.ElicitationID == id {
					return
				}
			case <-deadline:
				t.Fatal("no notifications/elicitation/complete after Decline on the page")
			}
		}
	}

	t.Run("blocking", func(t *testing.T) {
		out := blocking.call("connect_account", map[string]any{})
		var el *v2Elicitation
		select {
		case ev := <-blocking.events:
			el = ev.Params
			if ev.Event != "elicit" || el == nil || el.Mode != "url" || el.URL == "" {
				t.Fatalf("event %+v, want a URL-mode elicitation", ev)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no URL-mode elicitation")
		}
		choose(t, wd, el.URL, "decline")
		completes(t, blocking, el.ElicitationID)
		if r := blocking.wait(out, "connect_account"); r.Err != nil || r.Text != declined {
			t.Fatalf("got %q (%+v), want %q", r.Text, r.Err, declined)
		}
	})
	t.Run("-32042", func(t *testing.T) {
		args := map[string]any{"url_required_error": true}
		r := retrying.wait(retrying.call("connect_account", args), "connect_account")
		if r.Err == nil || r.Err.Code != -32042 || len(r.Err.Data.Elicitations) != 1 {
			t.Fatalf("got %q (%+v), want -32042", r.Text, r.Err)
		}
		el := r.Err.Data.Elicitations[0]
		choose(t, wd, el.URL, "decline")
		completes(t, retrying, el.ElicitationID)
		if r := retrying.wait(retrying.call("connect_account", args), "the retry"); r.Err != nil || r.Text != declined {
			t.Fatalf("retry: got %q (%+v), want %q", r.Text, r.Err, declined)
		}
	})
}

// TestServeBrowserFallbackURLMode: `serve --fallback browser` covers URL
// mode (item 14). A client without URL mode that shows log messages calls
// connect_account: the log message gives the consent page's link (never
// the tool result), the user accepts in Chromium, and the call returns
// connected; on both protocols.
func TestServeBrowserFallbackURLMode(t *testing.T) { serveBrowserFallbackURLMode(t) }

// TestServeSDKMCPGoBrowserFallbackURLMode: the same on serve --sdk mcp-go.
func TestServeSDKMCPGoBrowserFallbackURLMode(t *testing.T) {
	serveBrowserFallbackURLMode(t, "--sdk", "mcp-go")
}

func serveBrowserFallbackURLMode(t *testing.T, args ...string) {
	wd := webdriver.Start(t)
	srv := startServe(t, nil, append([]string{"--fallback", "browser"}, args...)...)
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			cs, logs, params := loggingClient(t, srv.mcpURL(), v.version, "connect_account")
			done := make(chan string, 1)
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res, err := cs.CallTool(ctx, params)
				switch {
				case err != nil:
					done <- err.Error()
				default:
					done <- fronttest.Text(res)
				}
			}()
			var msg string
			select {
			case msg = <-logs:
			case out := <-done:
				t.Fatalf("the call returned %q without announcing the page", out)
			case <-time.After(15 * time.Second):
				t.Fatal("no log message announced the page")
			}
			link := regexp.MustCompile(`http://\S+` + regexp.QuoteMeta(elicit.PagesPrefix+"consent") + `\?token=\S+`).FindString(msg)
			if link == "" {
				t.Fatalf("log message without the consent page's link: %q", msg)
			}
			acceptConnects(t, wd, link, done)
		})
	}
}

// TestServeConsentPageSandboxedFrame: a cross-site page frames a
// sandboxed form that posts Accept to the user's consent link (Chromium
// sends Origin: null and Sec-Fetch-Site: cross-site). The consent page
// refuses it, as the browser form does (item 15): the link is not used up,
// and the user's own Accept completes the call.
func TestServeConsentPageSandboxedFrame(t *testing.T) {
	wd := webdriver.Start(t)
	srv := startServe(t, nil)
	links := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "integration-url", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			links <- req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.mcpURL()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out, _, err := callText(ctx, cs, "connect_account", nil)
		if err != nil {
			out = err.Error()
		}
		done <- out
	}()
	link := nextLink(t, links)

	// The attacker's page, on another site (localhost, not 127.0.0.1): a
	// sandboxed frame (an opaque origin) posts Accept to the link, through
	// a proxy that records the server's answer. The page's
	// Cross-Origin-Resource-Policy keeps the frame from reading even
	// whether its no-cors POST was answered, so the proxy is the witness.
	target, err := url.Parse(srv.base)
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan int, 1)
	rp := httputil.NewSingleHostReverseProxy(target)
	direct := rp.Director
	rp.Director = func(r *http.Request) {
		direct(r)
		r.Host = target.Host // the server answers only its own host
	}
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodPost {
			refused <- r.StatusCode
		}
		return nil
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	frameLink := strings.Replace(link, srv.base, proxy.URL, 1)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lit, _ := json.Marshal(frameLink)
		frame := `<script>fetch(` + string(lit) + `, {method: "POST", mode: "no-cors", body: new URLSearchParams({action: "accept"})})` +
			`.then(() => parent.postMessage("posted", "*"), () => parent.postMessage("failed", "*"))</script>`
		fmt.Fprintf(w, `<!doctype html><title>waiting</title><script>onmessage = e => { document.title = e.data }</script>`+
			`<iframe sandbox="allow-scripts" srcdoc="%s"></iframe>`, html.EscapeString(frame))
	}))
	t.Cleanup(attacker.Close)
	wd.Navigate(strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1))
	select {
	case code := <-refused:
		if code != http.StatusForbidden {
			t.Fatalf("the frame's POST was answered %d, want 403", code)
		}
	case <-time.After(10 * time.Second):
		title, _ := wd.Exec(`return document.title`).(string)
		t.Fatalf("the sandboxed frame's POST never reached the server (frame: %q)", title)
	}
	select {
	case out := <-done:
		t.Fatalf("the frame's POST completed the call: %q", out)
	default:
	}
	acceptConnects(t, wd, link, done) // the link is still the user's
}

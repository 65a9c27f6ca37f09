//lint:file-ignore SA1019 the browser form is announced through MCP logging, deprecated in 2026-07-28 but still delivered

package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/internal/browserform/browserformtest"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/webdriver"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everything is a form with every field kind of the MCP subset.
type everything struct {
	Name      string   `json:"name"`
	Email     string   `json:"email"`
	Website   string   `json:"website,omitempty"`
	Birthday  string   `json:"birthday,omitempty"`
	Meeting   string   `json:"meeting,omitempty"`
	Age       int      `json:"age"`
	Ratio     float64  `json:"ratio,omitempty"`
	Subscribe bool     `json:"subscribe,omitempty"`
	Warehouse string   `json:"warehouse"`
	Plan      string   `json:"plan,omitempty"`
	Size      string   `json:"size,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

func everythingSchema(s *jsonschema.Schema) error {
	p := s.Properties
	p["name"].MinLength, p["name"].MaxLength, p["name"].Title = jsonschema.Ptr(2), jsonschema.Ptr(20), "Name"
	p["email"].Format = "email"
	p["website"].Format = "uri"
	p["birthday"].Format = "date"
	p["meeting"].Format = "date-time"
	p["age"].Minimum, p["age"].Maximum = jsonschema.Ptr(18.0), jsonschema.Ptr(130.0)
	p["ratio"].Minimum, p["ratio"].Maximum, p["ratio"].Default = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0), json.RawMessage(`0.5`)
	p["subscribe"].Default = json.RawMessage(`true`)
	p["warehouse"].Enum = []any{"berlin", "lisbon"}
	var pro, free any = "pro", "free"
	p["plan"].OneOf = []*jsonschema.Schema{{Const: &pro, Title: "Professional"}, {Const: &free, Title: "Free"}}
	p["size"].Enum = []any{"s", "m", "l"}
	p["size"].Extra = map[string]any{"enumNames": []any{"Small", "Medium", "Large"}}
	p["size"].Default = json.RawMessage(`"m"`)
	p["tags"].Items.Enum = []any{"red", "green", "blue"}
	p["tags"].MaxItems = jsonschema.Ptr(2)
	return nil
}

var browserConfig = &elicit.Config{Fallbacks: []elicit.Fallback{elicit.BrowserForm}, TTL: time.Minute}

// browserEnv is a server with the browser-form fallback and a tool "form"
// that asks for everything, and "confirm".
type browserEnv struct {
	*env
	runs atomic.Int32
	errs chan error // each run's elicitation error
}

func newBrowserEnv(t *testing.T, cfg *elicit.Config) *browserEnv {
	e := &browserEnv{env: newEnv(t, cfg), errs: make(chan error, 8)}
	t.Cleanup(func() { e.ev.Close() })
	e.tool("form", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		e.runs.Add(1)
		res, err := elicit.Form[everything](ctx, "Which warehouse?", elicit.WithSchema(mustRing(elicit.SchemaFor[everything](everythingSchema))))
		e.errs <- err
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %+v", res.Action, res.Content), nil
	})
	e.tool("confirm", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		ok, err := elicit.Confirm(ctx, "Ship it?")
		e.errs <- err
		return fmt.Sprint(ok), nil
	})
	return e
}

// announcement is what the client was told about a browser form.
type announcement struct {
	URL, Code string
	Via       string // "log" or "progress"
}

var (
	announcedURL  = regexp.MustCompile(`(http://127\.0\.0\.1:\d+/f/\S+)`)
	announcedCode = regexp.MustCompile(`verification code ([A-Z]+-[A-Z]+-\d{2})`)
)

func parseAnnouncement(t *testing.T, via, s string) announcement {
	t.Helper()
	u, c := announcedURL.FindStringSubmatch(s), announcedCode.FindStringSubmatch(s)
	if u == nil || c == nil {
		t.Fatalf("announcement without URL or code: %q", s)
	}
	return announcement{URL: u[1], Code: c[1], Via: via}
}

// listener is a client without elicitation that collects log messages and
// progress notifications.
func listener(announced chan<- announcement, t *testing.T) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Level != "notice" || req.Params.Logger != "elicitvault" {
				t.Errorf("log message at %s from %q", req.Params.Level, req.Params.Logger)
			}
			s, _ := req.Params.Data.(string)
			announced <- parseAnnouncement(t, "log", s)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			announced <- parseAnnouncement(t, "progress", req.Params.Message)
		},
	}
}

// connectListening connects a listener and sets its logging level to info
// (per session before 2026-07-28; per request, in callParams, after).
func (e *browserEnv) connectListening(version string) (*mcp.ClientSession, chan announcement) {
	announced := make(chan announcement, 4)
	cs := e.connect(listener(announced, e.t), version)
	if version == legacy {
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			e.t.Fatal(err)
		}
	}
	return cs, announced
}

func callParams(name string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}}
}

// callAsync calls a tool in the background.
func callAsync(t *testing.T, ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, p)
		switch {
		case err != nil:
			out <- "protocol error: " + err.Error()
		case res.IsError:
			out <- "tool error: " + text(res)
		default:
			out <- text(res)
		}
	}()
	return out
}

func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	return fronttest.Recv(t, c, what)
}

// postForm submits the form at a's URL; without the nonce when nonce is
// false.
func postForm(t *testing.T, a announcement, v url.Values, nonce bool) (int, string) {
	t.Helper()
	u, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	if nonce {
		v.Set("_nonce", u.Query().Get("n"))
	}
	u.RawQuery = ""
	resp, err := http.PostForm(u.String(), v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func everythingAnswer() url.Values {
	return url.Values{
		"_action": {"accept"},
		"name":    {"Ada"}, "email": {"ada@example.com"}, "age": {"36"}, "warehouse": {"lisbon"},
		"subscribe": {"true"}, "tags": {"red", "blue"}, "ratio": {"0.25"}, "plan": {"pro"}, "size": {"l"},
	}
}

const everythingResult = "accept {Name:Ada Email:ada@example.com Website: Birthday: Meeting: Age:36 Ratio:0.25 Subscribe:true Warehouse:lisbon Plan:pro Size:l Tags:[red blue]}"

// The browser form through the elicit flow, with a plain HTTP client: the
// page shows the code the client was sent; the server validates; one
// submission; 403 without the nonce.
func TestBrowserForm(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newBrowserEnv(t, browserConfig)
		cs, announced := e.connectListening(version)
		done := callAsync(t, context.Background(), cs, callParams("form"))
		a := waitFor(t, announced, "announcement")
		if a.Via != "log" {
			t.Errorf("announced via %s", a.Via)
		}
		resp, err := http.Get(a.URL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(page), a.Code) || !strings.Contains(string(page), "Which warehouse?") {
			t.Fatalf("page %d lacks the code %s", resp.StatusCode, a.Code)
		}

		if code, _ := postForm(t, a, everythingAnswer(), false); code != http.StatusForbidden {
			t.Errorf("without nonce: %d, want 403", code)
		}
		bad := everythingAnswer()
		bad.Set("age", "12")
		if code, body := postForm(t, a, bad, true); code != http.StatusUnprocessableEntity || !strings.Contains(body, "age") {
			t.Errorf("age 12: %d", code)
		}
		if code, _ := postForm(t, a, everythingAnswer(), true); code != 200 {
			t.Fatalf("submission: %d", code)
		}
		if got := waitFor(t, done, "result"); got != everythingResult {
			t.Fatalf("tool got %q\nwant %q", got, everythingResult)
		}
		if code, _ := postForm(t, a, everythingAnswer(), true); code != http.StatusConflict {
			t.Errorf("second submission: %d, want 409", code)
		}
		if n := e.runs.Load(); n != 1 {
			t.Errorf("handler ran %d times", n)
		}
		e.assertEmpty()
	})
}

// Confirm through the browser is true only on an explicit accept; decline,
// cancel, the TTL and the end of the call are all false.
func TestBrowserConfirm(t *testing.T) {
	for _, tc := range []struct {
		name string
		form url.Values // nil: do not answer
		want string
		err  error
	}{
		{"accept", url.Values{"_action": {"accept"}, "confirm": {"true"}}, "true", nil},
		{"accept unchecked", url.Values{"_action": {"accept"}}, "false", nil},
		{"decline", url.Values{"_action": {"decline"}, "confirm": {"true"}}, "false", nil},
		{"cancel", url.Values{"_action": {"cancel"}}, "false", nil},
		{"timeout", nil, "false", elicit.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newBrowserEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.BrowserForm}, TTL: 500 * time.Millisecond})
			cs, announced := e.connectListening(legacy)
			done := callAsync(t, context.Background(), cs, callParams("confirm"))
			a := waitFor(t, announced, "announcement")
			if tc.form != nil {
				if code, _ := postForm(t, a, tc.form, true); code != 200 {
					t.Fatalf("submission: %d", code)
				}
			}
			if got := waitFor(t, done, "result"); got != tc.want {
				t.Errorf("got %q, want %s", got, tc.want)
			}
			if err := <-e.errs; !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			e.assertEmpty()
		})
	}
}

// The end of the call (the client cancels it) ends the form.
func TestBrowserCancelledWithTheCall(t *testing.T) {
	e := newBrowserEnv(t, browserConfig)
	cs, announced := e.connectListening(legacy)
	ctx, cancel := context.WithCancel(context.Background())
	callAsync(t, ctx, cs, callParams("form"))
	a := waitFor(t, announced, "announcement")
	cancel()
	if err := waitFor(t, e.errs, "end of the handler"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler got %v", err)
	}
	if code, _ := postForm(t, a, everythingAnswer(), true); code != http.StatusConflict {
		t.Errorf("submission after the call ended: %d, want 409", code)
	}
	e.assertEmpty()
}

// The fallback applies only where the user can be told: without a logging
// level or a progress token the call fails as unsupported; a progress
// token, or OpenBrowser, is enough.
func TestBrowserAnnouncement(t *testing.T) {
	t.Run("nowhere", func(t *testing.T) {
		e := newBrowserEnv(t, browserConfig)
		cs := e.connect(mute, legacy)
		if got, _ := call(t, cs, "form"); !strings.Contains(got, "does not support form") {
			t.Errorf("got %q", got)
		}
		if err := <-e.errs; !errors.Is(err, elicit.ErrUnsupported) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("progress", func(t *testing.T) {
		e := newBrowserEnv(t, browserConfig)
		announced := make(chan announcement, 4)
		cs := e.connect(listener(announced, t), legacy)
		p := &mcp.CallToolParams{Name: "form"}
		p.SetProgressToken("tok-1")
		done := callAsync(t, context.Background(), cs, p)
		a := waitFor(t, announced, "announcement")
		if a.Via != "progress" {
			t.Errorf("announced via %s", a.Via)
		}
		postForm(t, a, everythingAnswer(), true)
		if got := waitFor(t, done, "result"); got != everythingResult {
			t.Errorf("got %q", got)
		}
	})
	t.Run("OpenBrowser", func(t *testing.T) {
		opened := make(chan string, 1)
		e := newBrowserEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.BrowserForm},
			OpenBrowser: func(_ context.Context, u string) error { opened <- u; return nil }})
		cs := e.connect(mute, legacy)
		done := callAsync(t, context.Background(), cs, &mcp.CallToolParams{Name: "form"})
		u := waitFor(t, opened, "opened page")
		a := announcement{URL: u}
		postForm(t, a, url.Values{"_action": {"decline"}}, true)
		if got := waitFor(t, done, "result"); !strings.HasPrefix(got, "decline") {
			t.Errorf("got %q", got)
		}
	})
}

// The order of the fallbacks is the server's, unless the call says.
func TestFallbackOrder(t *testing.T) {
	e := newBrowserEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated, elicit.BrowserForm}})
	e.tool("browser-only", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		ok, err := elicit.Confirm(ctx, "Really?", elicit.WithFallbacks(elicit.BrowserForm))
		return fmt.Sprint(ok), err
	})
	cs, announced := e.connectListening(legacy)
	pendingOf(t, callTool(t, cs, "form", nil))
	done := callAsync(t, context.Background(), cs, callParams("browser-only"))
	a := waitFor(t, announced, "announcement")
	postForm(t, a, url.Values{"_action": {"accept"}, "confirm": {"true"}}, true)
	if got := waitFor(t, done, "result"); got != "true" {
		t.Errorf("got %q", got)
	}
}

// TestBrowserChromium drives the browser form of an elicitation in a real
// headless Chromium: the page shows the verification code the client got
// in the log message; every field kind is filled; the tool receives the
// validated content; a second submission gets 409, one without the nonce
// 403. It skips without chromium and chromedriver unless
// ELICITVAULT_REQUIRE_BROWSER=1.
func TestBrowserChromium(t *testing.T) {
	wd := webdriver.Start(t)
	forBoth(t, func(t *testing.T, version string) {
		e := newBrowserEnv(t, browserConfig)
		cs, announced := e.connectListening(version)
		done := callAsync(t, context.Background(), cs, callParams("form"))
		a := waitFor(t, announced, "announcement")

		wd.Navigate(a.URL)
		if code := wd.Text("#code"); code != a.Code {
			t.Fatalf("page shows code %q, the log message said %q", code, a.Code)
		}
		browserformtest.AcceptEveryField(wd)

		want := "accept {Name:Ada Lovelace Email:ada@example.com Website:https://example.com/ada Birthday:1815-12-10 " +
			"Meeting:2026-12-01T09:30:00Z Age:36 Ratio:0.75 Subscribe:false Warehouse:lisbon Plan:pro Size:l Tags:[red blue]}"
		if got := waitFor(t, done, "result"); got != want {
			t.Fatalf("tool got %q\nwant %q\npage: %v", got, want, wd.Exec(`return document.body.innerText`))
		}
		if got := wd.Text("#ended"); got != "Thank you" {
			t.Errorf("page after submit: %q", got)
		}
		if code, _ := postForm(t, a, everythingAnswer(), true); code != http.StatusConflict {
			t.Errorf("second submission: %d, want 409", code)
		}
		if code, _ := postForm(t, a, everythingAnswer(), false); code != http.StatusForbidden {
			t.Errorf("without nonce: %d, want 403", code)
		}
		e.assertEmpty()
	})
}

// A newer elicitation in the session ends the browser form of an older
// one, whose caller gets ErrCancelled.
func TestBrowserSuperseded(t *testing.T) {
	e := newBrowserEnv(t, browserConfig)
	cs, announced := e.connectListening(legacy)
	first := callAsync(t, context.Background(), cs, callParams("form"))
	a := waitFor(t, announced, "first announcement")
	second := callAsync(t, context.Background(), cs, callParams("confirm"))
	b := waitFor(t, announced, "second announcement")
	if got := waitFor(t, first, "first result"); !strings.Contains(got, elicit.ErrReplaced.Error()) {
		t.Errorf("first: %q, want ErrCancelled", got)
	}
	if code, _ := postForm(t, a, everythingAnswer(), true); code != http.StatusConflict {
		t.Errorf("the replaced form took a submission: %d", code)
	}
	postForm(t, b, url.Values{"_action": {"accept"}, "confirm": {"true"}}, true)
	if got := waitFor(t, second, "second result"); got != "true" {
		t.Errorf("second: %q", got)
	}
	e.assertEmpty()
}

// Issue 20, item 14: the browser fallback covers URL mode. A client
// without URL mode is told the consent page's link as it is told a
// browser form's (a log message at notice, never a tool result), and the
// call waits for the user's choice on the page.
func TestBrowserFallbackURLMode(t *testing.T) {
	linkRE := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/cb\?token=\S+)`)
	forBoth(t, func(t *testing.T, version string) {
		for _, choice := range []string{"accept", "decline"} {
			e := newBrowserEnv(t, browserConfig)
			srv := e.callback()
			e.tool("connect", urlTool(srv.URL))
			logs := make(chan string, 4)
			cs := e.connect(&mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				s, _ := req.Params.Data.(string)
				logs <- s
			}}, version)
			if version == legacy {
				if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
			}
			out := callAsync(t, t.Context(), cs, callParams("connect"))
			msg := waitFor(t, logs, "announcement of the page")
			m := linkRE.FindStringSubmatch(msg)
			if m == nil || !strings.HasPrefix(msg, "Connect your account") {
				t.Fatalf("announcement %q", msg)
			}
			if s := choose(t, m[1], choice); s != http.StatusOK {
				t.Fatalf("page: %d", s)
			}
			if got := waitFor(t, out, "tool result"); got != choice {
				t.Fatalf("got %q, want %q", got, choice)
			}
			e.assertEmpty()
		}
	})
}

package elicit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/testclock"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageEnv is a server behind elicit.Handler on a real listener, with
// Config.BaseURL set to it: what a server author mounts.
type pageEnv struct {
	ev   *elicit.Elicitor
	srv  *httptest.Server
	urls chan string
}

func newPageEnv(t *testing.T, user func(*http.Request) (string, bool)) *pageEnv {
	t.Helper()
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	return newPageEnvOn(t, st, user)
}

// newPageEnvOn is newPageEnv on the store st.
func newPageEnvOn(t *testing.T, st store.Store, user func(*http.Request) (string, bool)) *pageEnv {
	t.Helper()
	return newPageEnvWith(t, st, user, &elicit.Config{}, "Connect your account")
}

// newPageEnvWith is newPageEnvOn with cfg (BaseURL and TTL are set here)
// and a tool that asks message.
func newPageEnvWith(t *testing.T, st store.Store, user func(*http.Request) (string, bool), cfg *elicit.Config, message string) *pageEnv {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg.BaseURL = "http://" + srv.Listener.Addr().String()
	cfg.TTL = 10 * time.Second
	k, err := keyring.New([]byte("pages test secret, thirty-two bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := elicit.New(k, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "pages", Version: "1"}, nil)
	ev.Install(s)
	e := &pageEnv{ev: ev, srv: srv, urls: make(chan string, 4)}
	e.addTool(s, message)
	srv.Config.Handler = ev.Handler(s, &elicit.HandlerOptions{User: user})
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

func (e *pageEnv) addTool(s *mcp.Server, message string) {
	mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := elicit.URL(ctx, message)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(a)}}}, nil, nil
	})
}

// call runs the tool from a go-sdk client over Streamable HTTP at version;
// visit gets the URL the client was sent.
func (e *pageEnv) call(t *testing.T, version string, visit func(u string)) string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		Capabilities: bothModes,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			go visit(req.Params.URL)
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.srv.URL + elicit.MCPPath}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect"})
	if err != nil {
		return "error: " + err.Error()
	}
	return res.Content[0].(*mcp.TextContent).Text
}

type page struct {
	status int
	body   string
}

func fetch(t *testing.T, method, u string, form url.Values, hdr map[string]string) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, string(b)}
}

var titleRE = regexp.MustCompile(`<h1>([^<]*)</h1>`)

func (p page) title() string {
	m := titleRE.FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return m[1]
}

// The consent page offers Accept and Decline; viewing it uses nothing up,
// the user's choice does, and the call gets that choice. A used link says
// it was used. Both protocol paths, through elicit.Handler.
func TestConsentPage(t *testing.T) {
	t.Parallel()
	for _, version := range []string{legacy, "2026-07-28"} {
		for _, choice := range []string{"accept", "decline"} {
			t.Run(version+"/"+choice, func(t *testing.T) {
				t.Parallel()
				e := newPageEnv(t, nil)
				var link string
				done := make(chan struct{})
				got := e.call(t, version, func(u string) {
					defer close(done)
					link = u
					if !strings.HasPrefix(u, e.srv.URL+elicit.ConsentPath+"?token=ev2.") {
						t.Errorf("link %q is not the consent page", u)
					}
					for range 2 { // a link previewer, then the user
						p := fetch(t, "GET", u, nil, nil)
						if p.status != 200 || !strings.Contains(p.body, `value="accept"`) || !strings.Contains(p.body, `value="decline"`) {
							t.Errorf("consent page: %d %q", p.status, p.body)
						}
					}
					if p := fetch(t, "POST", u, url.Values{"action": {choice}}, nil); p.status != 200 {
						t.Errorf("choice: %d %s", p.status, p.title())
					}
				})
				<-done
				if got != choice {
					t.Fatalf("the tool got %q, want %q", got, choice)
				}
				p := fetch(t, "GET", link, nil, nil)
				if p.status != http.StatusGone || p.title() != "This link was already used" {
					t.Fatalf("used link: %d %q", p.status, p.title())
				}
				if p := fetch(t, "POST", link, url.Values{"action": {"accept"}}, nil); p.status != http.StatusGone {
					t.Fatalf("second answer: %d %q", p.status, p.title())
				}
			})
		}
	}
}

// The consent page says what the person accepts: the elicitation's
// message and the name of the server that asks (Config.ServerName, else
// the host of Config.BaseURL), escaped: a message or a name with markup
// in it shows as text, nothing of it runs or renders. The message reaches
// the page through the sealed pending record: no value written to the
// store holds it in the clear, and the link does not carry it. Both
// protocol paths, through elicit.Handler.
func TestConsentPageSaysWhat(t *testing.T) {
	t.Parallel()
	const hostile = `Connect <script>alert(1)</script><img src=x onerror=alert(2)> "x" & 'y'`
	for _, c := range []struct {
		name, server, message string
		title, quote          string // what the page must show
	}{
		{"named", "Example Mail", "Connect your Example account", "Example Mail asks you to confirm", "Connect your Example account"},
		{"host", "", "Connect your Example account", "127.0.0.1 asks you to confirm", "Connect your Example account"},
		{"markup", `Evil <b>Corp</b>`, hostile, "Evil &lt;b&gt;Corp&lt;/b&gt; asks you to confirm",
			"Connect &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; &#34;x&#34; &amp; &#39;y&#39;"},
	} {
		for _, version := range []string{legacy, "2026-07-28"} {
			t.Run(c.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				st := &putRecorder{Store: memory.New(nil)}
				t.Cleanup(func() { st.Close() })
				e := newPageEnvWith(t, st, nil, &elicit.Config{ServerName: c.server}, c.message)
				done := make(chan struct{})
				got := e.call(t, version, func(u string) {
					defer close(done)
					if strings.Contains(u, "Example") || strings.Contains(u, "script") {
						t.Errorf("the link %q carries the message", u)
					}
					p := fetch(t, "GET", u, nil, nil)
					if p.status != 200 || p.title() != c.title {
						t.Errorf("consent page: %d, title %q, want %q", p.status, p.title(), c.title)
					}
					if !strings.Contains(p.body, "<blockquote>"+c.quote+"</blockquote>") {
						t.Errorf("the page does not quote the message as %q:\n%s", c.quote, p.body)
					}
					for _, live := range []string{"<script", "<img", "<b>"} {
						if strings.Contains(p.body, live) {
							t.Errorf("the page has live markup %q from the message or the name:\n%s", live, p.body)
						}
					}
					if p := fetch(t, "POST", u, url.Values{"action": {"accept"}}, nil); p.status != 200 {
						t.Errorf("accept: %d %q", p.status, p.title())
					}
				})
				<-done
				if got != "accept" {
					t.Fatalf("the tool got %q", got)
				}
				if st.holds(c.message) {
					t.Fatal("a value written to the store holds the message in the clear")
				}
			})
		}
	}
}

// Config.Clock is the time the Elicitor judges expiry by: a link and
// its pending record, written for a minute, still open a second before
// the minute is up on that clock and are expired a second after, with no
// wait on the wall clock.
func TestConsentPageClock(t *testing.T) {
	t.Parallel()
	clock := new(testclock.Clock)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	e := newPageEnvWith(t, st, nil, &elicit.Config{Clock: clock.Now}, "Connect your account")
	tok := issueURLToken(t, e.ev, "") // valid for a minute
	u := e.srv.URL + elicit.ConsentPath + "?token=" + tok
	clock.Advance(59 * time.Second)
	if p := fetch(t, "GET", u, nil, nil); p.status != http.StatusOK {
		t.Fatalf("at 59 s: %d %q", p.status, p.title())
	}
	clock.Advance(2 * time.Second)
	if p := fetch(t, "GET", u, nil, nil); p.status != http.StatusGone || p.title() != "This link has expired" {
		t.Fatalf("at 61 s: %d %q", p.status, p.title())
	}
	if _, err := e.ev.CompleteURL(t.Context(), tok, "", elicit.Accept); !errors.Is(err, elicit.ErrUnknownElicitation) {
		t.Fatalf("CompleteURL at 61 s: %v", err)
	}
}

// putRecorder is a store that keeps every value written to it.
type putRecorder struct {
	store.Store
	mu   sync.Mutex
	puts [][]byte
}

func (s *putRecorder) keep(value []byte) {
	s.mu.Lock()
	s.puts = append(s.puts, bytes.Clone(value))
	s.mu.Unlock()
}

func (s *putRecorder) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	s.keep(value)
	return s.Store.Put(ctx, key, value, expiry)
}

func (s *putRecorder) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	s.keep(value)
	return s.Store.PutIfAbsent(ctx, key, value, expiry)
}

func (s *putRecorder) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	s.keep(value)
	return s.Store.Swap(ctx, key, value, expiry)
}

func (s *putRecorder) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	s.keep(value)
	return s.Store.CompareAndSwap(ctx, key, old, value, expiry)
}

func (s *putRecorder) Publish(ctx context.Context, channel string, msg []byte) error {
	s.keep(msg)
	return s.Store.Publish(ctx, channel, msg)
}

// holds reports whether a value written holds text.
func (s *putRecorder) holds(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.puts {
		if bytes.Contains(v, []byte(text)) {
			return true
		}
	}
	return false
}

// The pages refuse what an attacker would try: another Host (DNS
// rebinding), a cross-site POST, a link of a signed-in user opened by
// nobody or by another user, a bad action, a tampered token. None of them
// uses the link up: the right user can still answer.
func TestConsentPageRefusals(t *testing.T) {
	t.Parallel()
	user := func(r *http.Request) (string, bool) {
		u := r.Header.Get("X-User")
		return u, u != ""
	}
	e := newPageEnv(t, user)
	done := make(chan struct{})
	got := e.call(t, legacy, func(u string) {
		defer close(done)
		bad := func(name string, p page, status int) {
			t.Helper()
			if p.status != status {
				t.Errorf("%s: %d %q, want %d", name, p.status, p.title(), status)
			}
		}
		accept := url.Values{"action": {"accept"}}
		bad("other host", fetch(t, "GET", u, nil, map[string]string{"Host": "evil.example:80"}), http.StatusMisdirectedRequest)
		bad("other host POST", fetch(t, "POST", u, accept, map[string]string{"Host": "evil.example:80"}), http.StatusMisdirectedRequest)
		bad("cross-site POST", fetch(t, "POST", u, accept, map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden)
		// A sandboxed cross-site frame posts with Origin: null; a browser
		// that says the POST comes from another site is believed.
		bad("Origin null", fetch(t, "POST", u, accept, map[string]string{"Origin": "null"}), http.StatusForbidden)
		bad("Sec-Fetch-Site cross-site", fetch(t, "POST", u, accept, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
		bad("Sec-Fetch-Site same-site", fetch(t, "POST", u, accept, map[string]string{"Sec-Fetch-Site": "same-site"}), http.StatusForbidden)
		bad("Origin null, Sec-Fetch-Site cross-site", fetch(t, "POST", u, accept, map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
		bad("bad action", fetch(t, "POST", u, url.Values{"action": {"maybe"}}, nil), http.StatusBadRequest)
		tampered := strings.Replace(u, "token=ev2.", "token=ev2.A", 1)
		bad("tampered", fetch(t, "POST", tampered, accept, nil), http.StatusBadRequest)
		bad("PUT", fetch(t, "PUT", u, nil, nil), http.StatusMethodNotAllowed)
		// Still usable by the user.
		if p := fetch(t, "POST", u, accept, nil); p.status != 200 {
			t.Errorf("the user's answer after the refusals: %d %q", p.status, p.title())
		}
	})
	<-done
	if got != "accept" {
		t.Fatalf("got %q", got)
	}
}

// A link issued to a signed-in user opens only for that user, and not at
// all where the pages cannot tell the browser's user (fail closed).
func TestConsentPageUser(t *testing.T) {
	t.Parallel()
	user := func(r *http.Request) (string, bool) {
		u := r.Header.Get("X-User")
		return u, u != ""
	}
	for _, c := range []struct {
		name   string
		user   func(*http.Request) (string, bool)
		header string
		status int
	}{
		{"no user function", nil, "ann", http.StatusForbidden},
		{"not signed in", user, "", http.StatusForbidden},
		{"another user", user, "bob", http.StatusForbidden},
		{"the user", user, "ann", http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newPageEnv(t, c.user)
			tok := issueURLToken(t, e.ev, "ann")
			u := e.srv.URL + elicit.ConsentPath + "?token=" + tok
			p := fetch(t, "GET", u, nil, map[string]string{"X-User": c.header})
			if p.status != c.status {
				t.Fatalf("%d %q, want %d", p.status, p.title(), c.status)
			}
			if _, err := e.ev.CompleteURL(t.Context(), tok, c.header, elicit.Accept); c.header != "ann" && !errors.Is(err, elicit.ErrWrongUser) {
				t.Fatalf("CompleteURL as %q: %v", c.header, err)
			}
		})
	}
}

func issueURLToken(t *testing.T, e *elicit.Elicitor, subject string) string {
	t.Helper()
	tok, err := elicit.IssueURLToken(e, subject)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

package elicit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
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
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	k, err := keyring.New([]byte("pages test secret, thirty-two bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := elicit.New(k, st, &elicit.Config{BaseURL: base, TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "pages", Version: "1"}, nil)
	ev.Install(s)
	e := &pageEnv{ev: ev, srv: srv, urls: make(chan string, 4)}
	e.addTool(s)
	srv.Config.Handler = ev.Handler(s, &elicit.HandlerOptions{User: user})
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

func (e *pageEnv) addTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := elicit.URL(ctx, "Connect your account")
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
	for _, version := range []string{legacy, "2026-07-28"} {
		for _, choice := range []string{"accept", "decline"} {
			t.Run(version+"/"+choice, func(t *testing.T) {
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

// The pages refuse what an attacker would try: another Host (DNS
// rebinding), a cross-site POST, a link of a signed-in user opened by
// nobody or by another user, a bad action, a tampered token. None of them
// uses the link up: the right user can still answer.
func TestConsentPageRefusals(t *testing.T) {
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

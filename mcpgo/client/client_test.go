package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	evclient "github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo/client"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// versions are the protocol generations: elicitation/create, and input
// requests with a requestState.
var versions = []string{"2025-11-25", "2026-07-28"}

type ask = fronttest.Ask

// server is a go-sdk server (no elicitvault) over Streamable HTTP with
// the tool "ask" of [fronttest.AddAsk].
type server struct {
	url string
	log *fronttest.AskLog
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := gosdk.NewServer(&gosdk.Implementation{Name: "bare", Version: "1"}, nil)
	srv := &server{log: fronttest.AddAsk(s)}
	// The go-sdk serves 2026-07-28 from a stateless handler only: route
	// by the protocol version, as elicit.Handler does.
	stateful := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil)
	stateless := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	srv.url = hs.URL
	return srv
}

// got returns the elicitation capabilities the client declared, one a
// call, and every response that reached the tool.
func (s *server) got() ([]*gosdk.ElicitationCapabilities, []string) { return s.log.Got() }

// connect starts a real mcp-go client on version, answering with h.
func connect(t *testing.T, url string, h *client.Handler, version string) *mcpclient.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, append(h.Options(mcpgo.ClientCapabilities{}), mcpclient.WithProtocolVersion(version))...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go client", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return c
}

// call calls "ask" and returns the tool's text: the response the server got.
func call(t *testing.T, c *mcpclient.Client, a ask) (string, error) {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "ask"
	req.Params.Arguments = a
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}

// scripted is a UI whose answers are given by the test.
type scripted struct {
	mu      sync.Mutex
	forms   []*evclient.FormRequest
	urls    []*evclient.URLRequest
	form    func(n int) *evclient.Answer
	consent elicit.Action
}

func (s *scripted) Form(_ context.Context, f *evclient.FormRequest) (*evclient.Answer, error) {
	s.mu.Lock()
	s.forms = append(s.forms, f)
	n := len(s.forms)
	s.mu.Unlock()
	return s.form(n), nil
}

func (s *scripted) ConsentURL(_ context.Context, u *evclient.URLRequest) (elicit.Action, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urls = append(s.urls, u)
	return s.consent, nil
}

func (s *scripted) asked() (forms, urls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.forms), len(s.urls)
}

// opener records the links the Handler opened.
type opener struct {
	mu     sync.Mutex
	opened []string
}

func (o *opener) open(_ context.Context, u string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened = append(o.opened, u)
	return nil
}

func (o *opener) links() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.opened...)
}

const nameSchema = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","minLength":1,"maxLength":8},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
	"required":["name"]}`

func TestFormActions(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			srv := newServer(t)
			cases := []struct {
				answer *evclient.Answer
				want   string
			}{
				{&evclient.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "tags": []string{"b"}}},
					`{"action":"accept","content":{"name":"Ada","tags":["b"]}}`},
				{&evclient.Answer{Action: elicit.Decline}, `{"action":"decline"}`},
				{&evclient.Answer{Action: elicit.Cancel}, `{"action":"cancel"}`},
			}
			for _, tc := range cases {
				ui := &scripted{form: func(int) *evclient.Answer { return tc.answer }}
				c := connect(t, srv.url, client.New(&evclient.Options{Form: ui}), v)
				got, err := call(t, c, ask{Message: "Who?", Schema: nameSchema})
				if err != nil {
					t.Fatalf("%s: %v", tc.answer.Action, err)
				}
				if got != tc.want {
					t.Errorf("the server got %s, want %s", got, tc.want)
				}
				if f, _ := ui.asked(); f != 1 {
					t.Errorf("the UI was asked %d times, want 1", f)
				}
			}
			caps, _ := srv.got()
			for _, c := range caps {
				if c == nil || c.Form == nil || c.URL != nil {
					t.Errorf("the client declared %+v, want form only", c)
				}
			}
		})
	}
}

// TestInvalidAnswerNeverSent: a UI whose answer does not match the form
// is asked again with the problem; what never matches is refused, and the
// server gets nothing.
func TestInvalidAnswerNeverSent(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			srv := newServer(t)
			ui := &scripted{form: func(n int) *evclient.Answer {
				return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{"name": "a name far too long"}}
			}}
			c := connect(t, srv.url, client.New(&evclient.Options{Form: ui, MaxAttempts: 2}), v)
			if _, err := call(t, c, ask{Message: "Who?", Schema: nameSchema}); err == nil {
				t.Fatal("an answer outside the schema was accepted")
			} else if strings.Contains(err.Error(), "far too long") {
				t.Errorf("the error quotes the value: %v", err)
			}
			if f, _ := ui.asked(); f != 2 {
				t.Errorf("the UI was asked %d times, want 2", f)
			}
			ui2 := &scripted{form: func(n int) *evclient.Answer {
				if n == 1 {
					return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{"name": ""}}
				}
				return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}
			}}
			c2 := connect(t, srv.url, client.New(&evclient.Options{Form: ui2}), v)
			got, err := call(t, c2, ask{Message: "Who?", Schema: nameSchema})
			if err != nil || got != `{"action":"accept","content":{"name":"Ada"}}` {
				t.Errorf("after a corrected answer the server got %s, %v", got, err)
			}
			if f, _ := ui2.asked(); f != 2 || ui2.forms[1].Problem == nil {
				t.Error("the form was asked again without the problem")
			}
			if _, responses := srv.got(); len(responses) != 1 {
				t.Errorf("the server got %d responses, want only the valid one: %q", len(responses), responses)
			}
		})
	}
}

// TestHostileForms: a server that asks for a secret in form mode, or
// sends a schema outside the MCP subset, is refused before the UI sees
// it, and gets no content.
func TestHostileForms(t *testing.T) {
	hostile := map[string]string{
		"password field": `{"type":"object","properties":{"password":{"type":"string"}},"required":["password"]}`,
		"card number":    `{"type":"object","properties":{"n":{"type":"string","title":"Card number"}}}`,
		"nested object":  `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
		"not an object":  `{"type":"array","items":{"type":"string"}}`,
		"ref":            `{"type":"object","properties":{"a":{"$ref":"#/x"}}}`,
	}
	for _, v := range versions {
		for name, schema := range hostile {
			t.Run(v+"/"+name, func(t *testing.T) {
				srv := newServer(t)
				ui := &scripted{form: func(int) *evclient.Answer {
					return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{"password": "hunter2"}}
				}}
				h := client.New(&evclient.Options{Form: ui})
				c := connect(t, srv.url, h, v)
				if _, err := call(t, c, ask{Message: "Log in", Schema: schema}); err == nil {
					t.Fatal("a hostile form was answered")
				}
				if f, _ := ui.asked(); f != 0 {
					t.Errorf("the UI was shown a hostile form")
				}
				if _, responses := srv.got(); len(responses) != 0 {
					t.Errorf("the server got %q", responses)
				}
				// The refusal matches elicit/client's errors.
				var req mcpgo.ElicitationRequest
				req.Params = mcpgo.ElicitationParams{Message: "Log in", RequestedSchema: json.RawMessage(schema)}
				_, err := h.Elicit(t.Context(), req)
				if !errors.Is(err, evclient.ErrRefused) {
					t.Errorf("Elicit: %v, want ErrRefused", err)
				}
			})
		}
	}
}

// TestLinks: URL mode opens a link only after the user's consent, and
// never a link the policy refuses: the UI does not see it.
func TestLinks(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			srv := newServer(t)
			for _, consent := range []elicit.Action{elicit.Accept, elicit.Decline} {
				ui := &scripted{consent: consent}
				o := &opener{}
				c := connect(t, srv.url, client.New(&evclient.Options{URL: ui, Open: o.open, AllowedHosts: []string{"*.example.com"}}), v)
				got, err := call(t, c, ask{Mode: "url", Message: "Connect", URL: "https://auth.example.com/x?y=1"})
				if err != nil {
					t.Fatal(err)
				}
				if want := `{"action":"` + string(consent) + `"}`; got != want {
					t.Errorf("the server got %s, want %s", got, want)
				}
				links := o.links()
				if consent == elicit.Accept && (len(links) != 1 || links[0] != "https://auth.example.com/x?y=1") {
					t.Errorf("after consent the Handler opened %q", links)
				}
				if consent != elicit.Accept && len(links) != 0 {
					t.Errorf("without consent the Handler opened %q", links)
				}
				if _, u := ui.asked(); u != 1 || ui.urls[0].Host != "auth.example.com" {
					t.Errorf("the consent UI was asked %d times (%+v)", u, ui.urls)
				}
			}
			hostile := []string{
				"javascript:alert(1)",
				"http://auth.example.com/x",         // not https
				"https://user:pw@auth.example.com/", // user information
				"https://evil.test/",                // outside the allowlist
				"https://auth.example.com.evil.test/",
				"https://аuth.example.com/", // Cyrillic а
				"https://2130706433/",       // 127.0.0.1, read as a browser does
			}
			for _, link := range hostile {
				ui := &scripted{consent: elicit.Accept}
				o := &opener{}
				c := connect(t, srv.url, client.New(&evclient.Options{URL: ui, Open: o.open, AllowedHosts: []string{"*.example.com"}}), v)
				if got, err := call(t, c, ask{Mode: "url", Message: "Connect", URL: link}); err == nil {
					t.Errorf("%s: answered %s", link, got)
				}
				if _, u := ui.asked(); u != 0 {
					t.Errorf("%s: shown to the user", link)
				}
				if l := o.links(); len(l) != 0 {
					t.Errorf("%s: opened %q", link, l)
				}
			}
		})
	}
}

// TestNoUI: a Handler without a UI declares no elicitation, so a server
// cannot ask through it, and one with a form UI only does not declare URL
// mode and declines a link.
func TestNoUI(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			srv := newServer(t)
			c := connect(t, srv.url, client.New(nil), v)
			if got, err := call(t, c, ask{Message: "Who?", Schema: nameSchema}); err == nil {
				t.Errorf("a client without a UI answered %s", got)
			}
			caps, responses := srv.got()
			if len(caps) == 0 || caps[0] != nil {
				t.Errorf("a client without a UI declared %+v", caps)
			}
			if len(responses) != 0 {
				t.Errorf("the server got %q", responses)
			}

			h := client.New(&evclient.Options{Form: &scripted{form: func(int) *evclient.Answer { return &evclient.Answer{Action: elicit.Decline} }}})
			formOnly := newServer(t)
			call(t, connect(t, formOnly.url, h, v), ask{Message: "Who?", Schema: nameSchema})
			if caps, _ := formOnly.got(); len(caps) == 0 || caps[0] == nil || caps[0].URL != nil || caps[0].Form == nil {
				t.Errorf("a form-only Handler declares %+v", caps)
			}
			var req mcpgo.ElicitationRequest
			req.Params = mcpgo.ElicitationParams{Mode: "url", Message: "x", URL: "https://a.example.com/", ElicitationID: "e"}
			res, err := h.Elicit(t.Context(), req)
			if err != nil || res.Action != mcpgo.ElicitationResponseActionDecline {
				t.Errorf("a form-only Handler answered a link with %+v, %v", res, err)
			}
		})
	}
}

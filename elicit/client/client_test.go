package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var versions = []string{"2025-11-25", "2026-07-28"}

// ask is the argument of the bare server's tool: the elicitation to send.
type ask = fronttest.Ask

// bareServer is a go-sdk server of its own (no elicitvault) with the tool
// "ask" of [fronttest.AddAsk]. caps returns the elicitation capability the
// client declared in its last call.
func bareServer(t *testing.T) (s *mcp.Server, caps func() *mcp.ElicitationCapabilities) {
	s = mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	log := fronttest.AddAsk(s)
	return s, func() *mcp.ElicitationCapabilities {
		all, _ := log.Got()
		if len(all) == 0 {
			return nil
		}
		return all[len(all)-1]
	}
}

// wire records what the server side reads off the connection: the
// client's messages as sent, before the go-sdk server decodes them (and,
// for an elicitation/create result, adds the schema's defaults).
type wire struct {
	mcp.Transport
	mu   sync.Mutex
	msgs []string
}

func (w *wire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	return &wireConn{c, w}, err
}

type wireConn struct {
	mcp.Connection
	w *wire
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		b, _ := jsonrpc.EncodeMessage(m)
		c.w.mu.Lock()
		c.w.msgs = append(c.w.msgs, string(b))
		c.w.mu.Unlock()
	}
	return m, err
}

// elicitResults returns the elicitation results the client sent: the
// results of elicitation/create, and the input responses of tools/call.
func (w *wire) elicitResults() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs {
		var msg struct {
			Result *json.RawMessage `json:"result"`
			Params struct {
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(m), &msg)
		if msg.Result != nil && strings.Contains(string(*msg.Result), `"action"`) {
			out = append(out, string(*msg.Result))
		}
		for _, r := range msg.Params.InputResponses {
			out = append(out, string(r))
		}
	}
	return out
}

func connect(t *testing.T, s *mcp.Server, h *client.Handler, version string, mrtr bool) *mcp.ClientSession {
	t.Helper()
	cs, _ := connectWire(t, s, h, version, mrtr)
	return cs
}

func connectWire(t *testing.T, s *mcp.Server, h *client.Handler, version string, mrtr bool) (*mcp.ClientSession, *wire) {
	t.Helper()
	ct, mt := mcp.NewInMemoryTransports()
	st := &wire{Transport: mt}
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	o := &mcp.ClientOptions{}
	if !mrtr {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	h.Install(o)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, o)
	h.Attach(c)
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, st
}

// scripted is a UI whose answers are functions.
type scripted struct {
	mu      sync.Mutex
	forms   []*client.FormRequest
	urls    []*client.URLRequest
	form    func(n int, f *client.FormRequest) *client.Answer
	consent elicit.Action
}

func (s *scripted) Form(_ context.Context, f *client.FormRequest) (*client.Answer, error) {
	s.mu.Lock()
	s.forms = append(s.forms, f)
	n := len(s.forms)
	s.mu.Unlock()
	return s.form(n, f), nil
}

func (s *scripted) ConsentURL(_ context.Context, u *client.URLRequest) (elicit.Action, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urls = append(s.urls, u)
	return s.consent, nil
}

const schema = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","minLength":1},
	"email":{"type":"string","format":"email"},
	"guests":{"type":"integer","minimum":0,"maximum":4,"default":0},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
	"required":["name","email"]}`

func callAsk(t *testing.T, h *client.Handler, cs *mcp.ClientSession, a ask) (string, error) {
	t.Helper()
	res, err := h.CallTool(t.Context(), cs, &mcp.CallToolParams{Name: "ask", Arguments: a})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New(fronttest.Text(res))
	}
	return fronttest.Text(res), nil
}

// each runs f on both protocol versions, with the go-sdk's own
// multi-round-trip middleware and with Handler.CallTool doing the rounds.
func each(t *testing.T, f func(t *testing.T, version string, mrtr bool)) {
	for _, v := range versions {
		for _, mrtr := range []bool{true, false} {
			name := v
			if !mrtr {
				name += "/CallTool"
			}
			t.Run(name, func(t *testing.T) { f(t, v, mrtr) })
		}
	}
}

func TestFormAccept(t *testing.T) {
	each(t, func(t *testing.T, version string, mrtr bool) {
		s, caps := bareServer(t)
		ui := &scripted{form: func(n int, f *client.FormRequest) *client.Answer {
			if n == 1 {
				// Not an email address: asked again, never sent.
				return &client.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "email": "nope"}}
			}
			return &client.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "email": "ada@example.com", "tags": []string{"b"}}}
		}}
		h := client.New(&client.Options{Form: ui})
		cs := connect(t, s, h, version, mrtr)
		out, err := callAsk(t, h, cs, ask{Message: "Who?", Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		// The client sends no guests (the user left it out); the go-sdk
		// server adds its default to an elicitation/create result, and
		// the go-sdk client's multi-round-trip middleware to an input
		// response (TestFormSendsWhatTheUserChose checks the wire).
		want := `{"action":"accept","content":{"email":"ada@example.com","guests":0,"name":"Ada","tags":["b"]}}`
		if version == "2026-07-28" && !mrtr {
			want = `{"action":"accept","content":{"email":"ada@example.com","name":"Ada","tags":["b"]}}`
		}
		if out != want {
			t.Errorf("the server got %s, want %s", out, want)
		}
		if len(ui.forms) != 2 || ui.forms[1].Problem == nil || !strings.Contains(ui.forms[1].Problem.Error(), "/email") || strings.Contains(ui.forms[1].Problem.Error(), "nope") {
			t.Errorf("forms asked %d, problem %v", len(ui.forms), ui.forms[len(ui.forms)-1].Problem)
		}
		f := ui.forms[0]
		if f.Message != "Who?" || f.Server != "bare" || len(f.Fields) != 4 {
			t.Errorf("form %+v", f)
		}
		if c := caps(); c == nil || c.Form == nil || c.URL != nil {
			t.Errorf("declared %+v, want form only", c)
		}
	})
}

// The user's "none" stays none: the UI gets the defaults to pre-fill, and
// what it returns is what the server gets, without defaults added.
func TestFormSendsWhatTheUserChose(t *testing.T) {
	const share = `{"type":"object","properties":{
	"share":{"type":"string","enum":["nobody","all_partners"],"default":"all_partners"},
	"channels":{"type":"array","items":{"type":"string","enum":["email","sms","post"]},"default":["email","sms"]},
	"note":{"type":"string","default":"prefilled"},
	"count":{"type":"integer","default":3}}}`
	for _, c := range []struct {
		name    string
		content map[string]any
		want    string
	}{
		{"all emptied", map[string]any{}, `{"action":"accept"}`},
		{"unticked and cleared", map[string]any{"channels": []string{}, "note": ""}, `{"action":"accept","content":{"channels":[],"note":""}}`},
		{"one changed", map[string]any{"share": "nobody"}, `{"action":"accept","content":{"share":"nobody"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			each(t, func(t *testing.T, version string, mrtr bool) {
				if version == "2026-07-28" && mrtr {
					t.Skip("the go-sdk's multi-round-trip middleware adds the defaults itself (see Attach)")
				}
				s, _ := bareServer(t)
				ui := &scripted{form: func(_ int, f *client.FormRequest) *client.Answer {
					return &client.Answer{Action: elicit.Accept, Content: c.content}
				}}
				h := client.New(&client.Options{Form: ui})
				cs, w := connectWire(t, s, h, version, mrtr)
				if _, err := callAsk(t, h, cs, ask{Message: "Share?", Schema: share}); err != nil {
					t.Fatal(err)
				}
				if got := w.elicitResults(); len(got) != 1 || got[0] != c.want {
					t.Errorf("the client sent %s, want %s", got, c.want)
				}
				defaults := map[string]string{}
				for _, fd := range ui.forms[0].Fields {
					b, _ := json.Marshal(fd.Default)
					defaults[fd.Name] = string(b)
				}
				if want := map[string]string{"share": `"all_partners"`, "channels": `["email","sms"]`, "note": `"prefilled"`, "count": "3"}; fmt.Sprint(defaults) != fmt.Sprint(want) {
					t.Errorf("the UI got the defaults %v, want %v to pre-fill", defaults, want)
				}
			})
		})
	}
}

// The client refuses the forms that ask for a secret with the server's
// own check: names, titles and descriptions, folded.
func TestSecretFields(t *testing.T) {
	for _, prop := range []string{
		`"passcode":{"type":"string"}`, `"otp":{"type":"string"}`, `"code":{"type":"string","title":"2FA code"}`,
		`"cvv2":{"type":"string"}`, `"card":{"type":"string","title":"Card no."}`, `"social_security_number":{"type":"string"}`,
		`"phrase":{"type":"string","title":"Recovery phrase"}`, `"aws":{"type":"string","title":"AWS access key"}`,
		`"pincode":{"type":"string"}`, `"c":{"type":"string","title":"Contraseña"}`, `"mot_de_passe":{"type":"string"}`,
		`"login":{"type":"string","description":"Type your GitHub password here"}`, `"p\u0430ssword":{"type":"string"}`,
	} {
		_, err := client.NewFormRequest("m", json.RawMessage(`{"type":"object","properties":{`+prop+`}}`))
		if !errors.Is(err, client.ErrSecretField) || !errors.Is(err, client.ErrRefused) {
			t.Errorf("%s: %v, want ErrSecretField", prop, err)
		}
	}
	for _, prop := range []string{`"email":{"type":"string","format":"email"}`, `"name":{"type":"string"}`,
		`"notes":{"type":"string"}`, `"description":{"type":"string"}`, `"max_tokens":{"type":"integer"}`} {
		if _, err := client.NewFormRequest("m", json.RawMessage(`{"type":"object","properties":{`+prop+`}}`)); err != nil {
			t.Errorf("%s: %v", prop, err)
		}
	}
}

func TestFormRefused(t *testing.T) {
	each(t, func(t *testing.T, version string, mrtr bool) {
		s, _ := bareServer(t)
		ui := &scripted{form: func(int, *client.FormRequest) *client.Answer {
			return &client.Answer{Action: elicit.Accept, Content: map[string]any{"name": "", "email": "ada@example.com"}}
		}}
		h := client.New(&client.Options{Form: ui})
		cs := connect(t, s, h, version, mrtr)
		// An answer that never matches: refused after three attempts,
		// nothing sent.
		out, err := callAsk(t, h, cs, ask{Message: "Who?", Schema: schema})
		if err == nil || strings.Contains(out, "accept") || !strings.Contains(err.Error(), "does not match the form") {
			t.Errorf("got %q, %v; want the client's refusal", out, err)
		}
		if len(ui.forms) != 3 {
			t.Errorf("asked %d times, want 3", len(ui.forms))
		}
		// A form that asks for a secret: the user is never asked.
		ui.forms = nil
		pw := `{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string"}}}`
		out, err = callAsk(t, h, cs, ask{Message: "Log in", Schema: pw})
		if err == nil || !strings.Contains(err.Error(), "secret") || len(ui.forms) != 0 {
			t.Errorf("got %q, %v after %d forms; want the secret refused unasked", out, err, len(ui.forms))
		}
		// A schema outside the subset.
		nested := `{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`
		if out, err = callAsk(t, h, cs, ask{Message: "x", Schema: nested}); err == nil || len(ui.forms) != 0 {
			t.Errorf("a nested schema: got %q, %v", out, err)
		}
	})
}

func TestDeclineCancelNoUI(t *testing.T) {
	each(t, func(t *testing.T, version string, mrtr bool) {
		s, caps := bareServer(t)
		for _, action := range []elicit.Action{elicit.Decline, elicit.Cancel} {
			ui := &scripted{form: func(int, *client.FormRequest) *client.Answer {
				return &client.Answer{Action: action, Content: map[string]any{"name": "leak"}}
			}, consent: action}
			h := client.New(&client.Options{Form: ui, URL: ui, Open: func(context.Context, string) error {
				t.Error("opened a link the user did not agree to")
				return nil
			}})
			cs := connect(t, s, h, version, mrtr)
			for _, a := range []ask{{Message: "Who?", Schema: schema}, {Mode: "url", Message: "go", URL: "https://example.com/x"}} {
				out, err := callAsk(t, h, cs, a)
				if want := `{"action":"` + string(action) + `"}`; err != nil || out != want {
					t.Errorf("%s: got %q, %v; want %s", a.Message, out, err, want)
				}
			}
			if c := caps(); c == nil || c.Form == nil || c.URL == nil {
				t.Errorf("declared %+v, want form and url", c)
			}
		}
		// A UI for forms only does not declare URL mode: the go-sdk
		// refuses the request, or (where it does not check) the Handler
		// declines it.
		h := client.New(&client.Options{Form: &scripted{}})
		cs := connect(t, s, h, version, mrtr)
		if out, err := callAsk(t, h, cs, ask{Mode: "url", Message: "go", URL: "https://example.com/x"}); err == nil && out != `{"action":"decline"}` ||
			err != nil && !strings.Contains(err.Error(), `does not support "url"`) {
			t.Errorf("url mode without a URL UI: %q, %v", out, err)
		}
		if c := caps(); c == nil || c.Form == nil || c.URL != nil {
			t.Errorf("declared %+v, want form only", c)
		}
	})
}

func TestURLConsent(t *testing.T) {
	each(t, func(t *testing.T, version string, mrtr bool) {
		s, caps := bareServer(t)
		ui := &scripted{consent: elicit.Accept}
		var opened []string
		h := client.New(&client.Options{URL: ui, AllowedHosts: []string{"*.example.com", "login.test"},
			Open: func(_ context.Context, u string) error { opened = append(opened, u); return nil }})
		cs := connect(t, s, h, version, mrtr)
		link := "https://auth.example.com:8443/connect?token=abc#x"
		out, err := callAsk(t, h, cs, ask{Mode: "url", Message: "Connect", URL: link})
		if err != nil || out != `{"action":"accept"}` {
			t.Fatalf("got %q, %v", out, err)
		}
		if len(ui.urls) != 1 || ui.urls[0].URL != link || ui.urls[0].Host != "auth.example.com:8443" || ui.urls[0].Message != "Connect" || ui.urls[0].ElicitationID != "e1" {
			t.Errorf("consent asked for %+v", ui.urls)
		}
		if len(opened) != 1 || opened[0] != link {
			t.Errorf("opened %v", opened)
		}
		for _, bad := range []string{
			"https://evil.test/connect",           // outside the allowlist
			"http://auth.example.com/connect",     // http, not loopback
			"https://example.com.evil.test/",      // suffix trick
			"https://auth.example.com@evil.test/", // userinfo
		} {
			out, err := callAsk(t, h, cs, ask{Mode: "url", Message: "Connect", URL: bad})
			if err == nil || !strings.Contains(err.Error(), "refused URL") {
				t.Errorf("%s: got %q, %v; want refused", bad, out, err)
			}
		}
		if len(ui.urls) != 1 || len(opened) != 1 {
			t.Errorf("a refused link reached the user (%d) or the browser (%d)", len(ui.urls), len(opened))
		}
		if c := caps(); c == nil || c.URL == nil || c.Form != nil {
			t.Errorf("declared %+v, want url only", c)
		}
	})
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url, host string // host "" = refused
		allowed   []string
	}{
		{"https://example.com/a?b=c", "example.com", nil},
		{"HTTPS://Example.COM/", "example.com", nil},
		{"https://xn--exmple-cua.com/", "xn--exmple-cua.com", nil},
		{"http://127.0.0.1:8080/cb", "127.0.0.1:8080", nil},
		{"http://localhost/cb", "localhost", nil},
		{"http://[::1]:9/cb", "[::1]:9", nil},
		{"http://example.com/", "", nil},
		{"http://127.0.0.1.evil.test/", "", nil},
		{"https://exämple.com/", "", nil},
		{"https://example.com/\u202egnp.exe", "", nil},
		{"https://example.com/a b", "", nil},
		{"https://user:pw@example.com/", "", nil},
		{"https://example.com@evil.test/", "", nil},
		{"javascript:alert(1)", "", nil},
		{"file:///etc/passwd", "", nil},
		{"//example.com/", "", nil},
		{"https:///path", "", nil},
		{"https://ex%61mple.com/", "", nil},
		{"https://a.example.com/", "a.example.com", []string{"*.example.com"}},
		{"https://example.com/", "", []string{"*.example.com"}},
		{"https://example.com./", "example.com.", []string{"example.com"}},
		{"https://badexample.com/", "", []string{"*.example.com", "example.com"}},
	} {
		checkURL(t, tc.url, tc.allowed, tc.host, "")
	}
}

func TestParse(t *testing.T) {
	f, err := client.NewFormRequest("m", json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer","minimum":1,"maximum":3},
		"ok":{"type":"boolean"},
		"seat":{"type":"string","oneOf":[{"const":"w","title":"Window"},{"const":"a","title":"Aisle"}]},
		"tags":{"type":"array","items":{"anyOf":[{"const":"x","title":"Ex"},{"const":"y","title":"Why"}]},"maxItems":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*client.Field{}
	for i := range f.Fields {
		by[f.Fields[i].Name] = &f.Fields[i]
	}
	for _, tc := range []struct {
		field, in string
		want      any // nil = error
	}{
		{"n", "2", 2.0}, {"n", "4", nil}, {"n", "1.5", nil}, {"n", "two", nil},
		{"ok", "yes", true}, {"ok", "N", false}, {"ok", "maybe", nil},
		{"seat", "w", "w"}, {"seat", "aisle", "a"}, {"seat", "2", "a"}, {"seat", "3", nil},
		{"tags", "Why", []string{"y"}}, {"tags", "x, y", nil}, {"tags", "", []string{}},
	} {
		got, err := by[tc.field].Parse(tc.in)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tc.want)
		if (tc.want == nil) != (err != nil) || tc.want != nil && string(g) != string(w) {
			t.Errorf("%s %q: %s, %v; want %s", tc.field, tc.in, g, err, w)
		}
	}
	// Title is what to show: the name, or the value, when the server gave
	// no title.
	if by["n"].Title != "n" || by["seat"].Options[0].Title != "Window" {
		t.Errorf("titles: %q, %q", by["n"].Title, by["seat"].Options[0].Title)
	}
	if v, err := by["n"].Parse(" "); v != nil || err != nil {
		t.Errorf("empty: %v, %v; want nil, nil (left out)", v, err)
	}
}

// A UI interrupted (the context done) cancels.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	h := client.New(&client.Options{Form: uiFunc(func(ctx context.Context) (*client.Answer, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})})
	res, err := h.Elicit(ctx, &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "x", RequestedSchema: json.RawMessage(schema)}})
	if err != nil || res.Action != "cancel" {
		t.Errorf("got %+v, %v; want cancel", res, err)
	}
}

type uiFunc func(ctx context.Context) (*client.Answer, error)

func (f uiFunc) Form(ctx context.Context, _ *client.FormRequest) (*client.Answer, error) {
	return f(ctx)
}

// Without a UI, a Handler declares nothing, installs nothing and declines.
func TestNoUI(t *testing.T) {
	h := client.New(&client.Options{})
	if c := h.Capabilities(); c != nil {
		t.Errorf("capabilities %+v", c)
	}
	o := &mcp.ClientOptions{}
	h.Install(o)
	if o.ElicitationHandler != nil || o.Capabilities != nil {
		t.Errorf("installed %+v", o)
	}
	for _, p := range []*mcp.ElicitParams{
		{Message: "x", RequestedSchema: json.RawMessage(schema)},
		{Mode: "url", Message: "x", URL: "https://example.com/"},
	} {
		res, err := h.Elicit(t.Context(), &mcp.ElicitRequest{Params: p})
		if err != nil || res.Action != "decline" {
			t.Errorf("%s: %+v, %v", p.Mode, res, err)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Delete 3 contacts?\nSure?\t(yes)": "Delete 3 contacts?\nSure?\t(yes)",
		"a\x1b[2Jb":                        "a\uFFFDb",
		"\x1b]0;title\x07":                 "\uFFFD",
		"pay \u202egnp.exe":                "pay \uFFFDgnp.exe",
		"zero\u200bwidth\u0085":            "zero\uFFFDwidth\uFFFD",
		"bad \xff byte":                    "bad \uFFFD byte",
		"Café ✓":                           "Café ✓",
	} {
		if got := client.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// A server that keeps asking ends CallTool after MaxRounds.
func TestTooManyRounds(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "pest", Version: "1"}, nil)
	var calls int
	mcp.AddTool(s, &mcp.Tool{Name: "again"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		calls++
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "again?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}, RequestState: "s"}, nil, nil
	})
	ui := &scripted{form: func(int, *client.FormRequest) *client.Answer {
		return &client.Answer{Action: elicit.Accept, Content: map[string]any{"ok": true}}
	}}
	h := client.New(&client.Options{Form: ui})
	cs := connect(t, s, h, "2026-07-28", false)
	_, err := h.CallTool(t.Context(), cs, &mcp.CallToolParams{Name: "again"})
	if !errors.Is(err, client.ErrTooManyRounds) || !errors.Is(err, client.ErrRefused) || calls != client.MaxRounds {
		t.Errorf("got %v after %d calls", err, calls)
	}
}

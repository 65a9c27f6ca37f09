package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsUI is the scripted user of the elicit/client tests against the
// TypeScript SDK's server.
type tsUI struct {
	mu      sync.Mutex
	forms   []*client.FormRequest
	urls    []*client.URLRequest
	opened  []string
	answer  func(n int) *client.Answer
	consent elicit.Action
}

func (u *tsUI) Form(_ context.Context, f *client.FormRequest) (*client.Answer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.forms = append(u.forms, f)
	return u.answer(len(u.forms)), nil
}

func (u *tsUI) ConsentURL(_ context.Context, r *client.URLRequest) (elicit.Action, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.urls = append(u.urls, r)
	return u.consent, nil
}

func (u *tsUI) open(_ context.Context, link string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.opened = append(u.opened, link)
	return nil
}

// connectTS starts interop/elicit-server.mjs and connects a go-sdk client
// whose elicitations the Handler of ui answers.
func connectTS(t *testing.T, ui *tsUI) *mcp.ClientSession {
	t.Helper()
	node, clientScript := nodeClient(t)
	script := filepath.Join(filepath.Dir(clientScript), "elicit-server.mjs")
	h := client.New(&client.Options{Form: ui, URL: ui, Open: ui.open, AllowedHosts: []string{"*.example.com"}})
	o := &mcp.ClientOptions{}
	h.Install(o)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, o)
	h.Attach(c)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(node, script)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTS(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	if args == nil {
		args = map[string]any{} // the TypeScript SDK refuses null arguments
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return fronttest.Text(res), res.IsError
}

// TestClientAgainstTypeScriptServer answers the elicitations of a server
// of the TypeScript SDK with elicit/client: what the TypeScript server
// receives is printed back by its tools.
func TestClientAgainstTypeScriptServer(t *testing.T) {
	valid := map[string]any{"name": "Ada", "email": "ada@example.com", "age": 36, "pets": []string{"cat"}}
	t.Run("accept", func(t *testing.T) {
		ui := &tsUI{answer: func(int) *client.Answer { return &client.Answer{Action: elicit.Accept, Content: valid} }}
		cs := connectTS(t, ui)
		if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Errorf("negotiated %s", v)
		}
		out, isErr := callTS(t, cs, "profile", nil)
		// The UI left the colour out (it gets the default to pre-fill):
		// the server gets what the UI submitted, no default added.
		want := `{"action":"accept","content":{"age":36,"email":"ada@example.com","name":"Ada","pets":["cat"]}}`
		if isErr || out != want {
			t.Errorf("the server got %s (error %v)\nwant %s", out, isErr, want)
		}
		f := ui.forms[0]
		if f.Server != "ts-elicit-server" || f.Message != "Tell us about you" || len(f.Fields) != 5 {
			t.Fatalf("form %+v", f)
		}
		for _, fd := range f.Fields {
			if fd.Name == "color" && (fd.Kind != client.Enum || len(fd.Options) != 2 || fd.Options[1].Title != "Blue" || fd.Default != "blue") {
				t.Errorf("color field %+v", fd)
			}
		}
	})
	t.Run("decline", func(t *testing.T) {
		ui := &tsUI{answer: func(int) *client.Answer { return &client.Answer{Action: elicit.Decline, Content: valid} }}
		out, isErr := callTS(t, connectTS(t, ui), "profile", nil)
		if isErr || out != `{"action":"decline"}` {
			t.Errorf("got %s (error %v)", out, isErr)
		}
	})
	t.Run("invalid answer corrected", func(t *testing.T) {
		ui := &tsUI{answer: func(n int) *client.Answer {
			if n == 1 {
				return &client.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "email": "ada@example.com", "age": 200}}
			}
			return &client.Answer{Action: elicit.Accept, Content: valid}
		}}
		out, isErr := callTS(t, connectTS(t, ui), "profile", nil)
		if isErr || !strings.Contains(out, `"age":36`) {
			t.Errorf("got %s (error %v)", out, isErr)
		}
		if len(ui.forms) != 2 || ui.forms[1].Problem == nil || !strings.Contains(ui.forms[1].Problem.Error(), "/age is greater than the maximum 150") {
			t.Errorf("asked %d times; problem %v", len(ui.forms), ui.forms[len(ui.forms)-1].Problem)
		}
	})
	t.Run("invalid answer refused", func(t *testing.T) {
		// An address the go-sdk's own check lets through (it checks types,
		// not formats): only elicit/client refuses it.
		bad := map[string]any{"name": "Ada", "email": "ada at example", "pets": []string{"fish"}}
		ui := &tsUI{answer: func(int) *client.Answer { return &client.Answer{Action: elicit.Accept, Content: bad} }}
		out, isErr := callTS(t, connectTS(t, ui), "profile", nil)
		// The TypeScript server never sees the content: it gets the
		// client's error.
		if !isErr || !strings.Contains(out, "does not match the form") || !strings.Contains(out, "/email") || strings.Contains(out, "ada at example") {
			t.Errorf("got %s (error %v)", out, isErr)
		}
	})
	t.Run("password refused", func(t *testing.T) {
		ui := &tsUI{answer: func(int) *client.Answer {
			return &client.Answer{Action: elicit.Accept, Content: map[string]any{"user": "a", "password": "p"}}
		}}
		out, isErr := callTS(t, connectTS(t, ui), "login", nil)
		if !isErr || !strings.Contains(out, "asks for a secret") || len(ui.forms) != 0 {
			t.Errorf("got %s (error %v), %d forms shown", out, isErr, len(ui.forms))
		}
	})
	t.Run("url", func(t *testing.T) {
		ui := &tsUI{consent: elicit.Accept}
		cs := connectTS(t, ui)
		link := "https://auth.example.com/connect?state=xyz"
		out, isErr := callTS(t, cs, "open", map[string]any{"url": link})
		if isErr || out != `{"action":"accept"}` {
			t.Errorf("allowed link: got %s (error %v)", out, isErr)
		}
		if len(ui.urls) != 1 || ui.urls[0].Host != "auth.example.com" || ui.urls[0].ElicitationID != "ts-1" || len(ui.opened) != 1 || ui.opened[0] != link {
			t.Errorf("consent %+v, opened %v", ui.urls, ui.opened)
		}
		for link, why := range map[string]string{
			"https://auth.evil.test/connect":      "not in the allowlist",
			"http://auth.example.com/connect":     "http is allowed only to a loopback address",
			"https://auth.example.com@evil.test/": "user information",
		} {
			out, isErr := callTS(t, cs, "open", map[string]any{"url": link})
			if !isErr || !strings.Contains(out, why) {
				t.Errorf("%s: got %s (error %v), want refused: %s", link, out, isErr, why)
			}
		}
		if len(ui.urls) != 1 || len(ui.opened) != 1 {
			t.Errorf("a refused link reached the user (%d) or the browser (%d)", len(ui.urls), len(ui.opened))
		}
		ui.consent = elicit.Decline
		if out, isErr := callTS(t, cs, "open", map[string]any{"url": link}); isErr || out != `{"action":"decline"}` || len(ui.opened) != 1 {
			t.Errorf("declined: got %s (error %v), opened %v", out, isErr, ui.opened)
		}
	})
}

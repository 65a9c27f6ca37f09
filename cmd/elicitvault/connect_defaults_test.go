package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireLog keeps the bodies of the requests an HTTP server receives: what
// the client sent, before the go-sdk server decodes it (and adds the
// schema's defaults to an elicitation/create result).
type wireLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *wireLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.bodies = append(l.bodies, string(b))
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}

// results returns the elicitation results the client sent: results of
// elicitation/create and input responses of tools/call.
func (l *wireLog) results() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.bodies {
		var msg struct {
			Result json.RawMessage `json:"result"`
			Params struct {
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(b), &msg) != nil {
			continue
		}
		if strings.Contains(string(msg.Result), `"action"`) {
			out = append(out, string(msg.Result))
		}
		for _, r := range msg.Params.InputResponses {
			out = append(out, string(r))
		}
	}
	return out
}

// defaultsServer is a go-sdk server whose tool "ask" asks for the form
// schema (as an input request, which the go-sdk server sends as
// elicitation/create on 2025-11-25), and logs what the client sends.
func defaultsServer(t *testing.T, schema map[string]any) (string, *wireLog) {
	s := mcp.NewServer(&mcp.Implementation{Name: "defaults", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["q"]; ok {
			b, _ := json.Marshal(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "got " + string(b)}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Your choices", RequestedSchema: schema}}, RequestState: "s"}, nil, nil
	})
	log := &wireLog{}
	hs := httptest.NewServer(log.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(hs.Close)
	return hs.URL, log
}

func checkSent(t *testing.T, log *wireLog, want string) {
	t.Helper()
	if got := log.results(); len(got) != 1 || got[0] != want {
		t.Errorf("the client sent %q, want %q", got, want)
	}
}

// The user's "none" stays none: in the terminal form, the defaults are
// pre-filled; the user sets the choice to (none), unticks every channel
// and clears the note, and that is what the server receives.
func TestConnectTmuxNoneStaysNone(t *testing.T) {
	requireTmux(t)
	buildBinary(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"share":    map[string]any{"type": "string", "enum": []any{"nobody", "all_partners"}, "default": "all_partners"},
		"channels": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"email", "sms", "post"}}, "default": []any{"email", "sms"}},
		"note":     map[string]any{"type": "string", "default": "prefilled"},
	}}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			url, log := defaultsServer(t, schema)
			p, _ := connectPane(t, "--protocol", proto, "--tool", "ask", url)
			p.waitFor(`Your choices[\s\S]*Fill in the form`)
			p.send("Enter")
			p.focus("channels")
			p.send("x", "Down", "x", "Enter") // untick email and sms
			s := p.focus("note")
			if !strings.Contains(s, "prefilled") {
				t.Errorf("the default note is not pre-filled:\n%s", s)
			}
			p.send("C-u", "Enter")
			p.focus("share")
			p.send("Up", "Up", "Enter") // (none)
			p.focus("Send this answer to the server?")
			p.send("y")
			p.waitFor(`got .*\s+\[exit 0\]`)
			checkSent(t, log, `{"action":"accept","content":{"channels":[],"note":""}}`)
		})
	}
}

// Line prompts (stdin not a terminal, here a pipe under tmux): Enter on a
// field whose default the prompt shows takes that default, required or
// not; "-" is none for an optional one.
func TestConnectTmuxLinesDefault(t *testing.T) {
	requireTmux(t)
	buildBinary(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"plan":   map[string]any{"type": "string", "enum": []any{"free", "pro"}, "default": "pro"},
		"region": map[string]any{"type": "string", "default": "eu"},
		"topics": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"email", "sms"}}, "default": []any{"sms"}},
		"seats":  map[string]any{"type": "integer", "default": 2},
	}, "required": []any{"plan", "region"}}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			url, log := defaultsServer(t, schema)
			// TERM=dumb: with an xterm, the terminal's reply to a
			// cursor-position query of the UI library at start-up
			// would be read by cat as the first typed line.
			p := startPane(t, []string{"TERM=dumb"}, "sh", "-c", "cat | "+shellQuote(binary(t))+" connect --protocol "+proto+" --tool ask "+shellQuote(url))
			p.waitFor(`Fill in the form\? \[y\]es`)
			p.typeText("y")
			p.send("Enter")
			// Fields by name: plan, region, seats, topics.
			p.waitFor(`plan \* \(.*default pro\):`)
			p.send("Enter")
			s := p.waitFor(`region \* \(.*default eu\):`)
			if strings.Contains(s, "required") {
				t.Fatalf("Enter on a required field with a default was refused:\n%s", s)
			}
			p.send("Enter")
			p.waitFor(`seats \(integer; Enter for the default 2; - for none\):`)
			p.send("Enter")
			p.waitFor(`topics \(.*Enter for the default \[sms\]; - for none\):`)
			p.typeText("-")
			p.send("Enter")
			p.waitFor(`Send this answer\?`)
			p.typeText("y")
			p.send("Enter")
			p.waitFor(`got .*`)
			checkSent(t, log, `{"action":"accept","content":{"plan":"pro","region":"eu","seats":2,"topics":[]}}`)
		})
	}
}

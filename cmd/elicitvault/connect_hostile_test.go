package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// evil is what a hostile server puts in every text it controls: it would
// set the pane title (OSC 2), write the clipboard (OSC 52), draw a
// hyperlink (OSC 8), colour and hide text (SGR), act through a C1 CSI,
// reverse the text (RLO) and blank it out (Hangul fillers).
const evil = "BEGIN\x1b]2;PWNED-TITLE\x07\x1b]52;c;UFdORUQtQ0xJUA==\x07" +
	"\x1b]8;;https://evil.example/\x1b\\LINK\x1b]8;;\x1b\\\x1b[31mRED\x1b[0m\x1b[8mHIDDEN\x1b[0m" +
	"\u009b32mCSI\u009d2;C1-TITLE\u009c\u202eRTL\u2066ISO\u3164\u115f\uffa0\u200bEND"

// hostileServer is a go-sdk server whose every text is evil: errors of
// initialize (when fail is "initialize") and of tools/call, a Streamable
// HTTP 400 body holding a JSON-RPC error (when fail is "http"), structuredContent without text and
// a resource_link's name.
func hostileServer(t *testing.T, fail string) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile" + evil, Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "rpcerror", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: evil}
	})
	s.AddTool(&mcp.Tool{Name: "structured", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"note": evil}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "resource", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{Name: evil, URI: "https://files.example/" + evil}}}, nil
	})
	elicitTool := func(name string, p *mcp.ElicitParams) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, p)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered " + res.Action}}}, nil
		})
	}
	elicitTool("form", &mcp.ElicitParams{Message: evil, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
		"pick": map[string]any{"type": "string", "title": evil, "description": evil,
			"oneOf": []any{map[string]any{"const": "a", "title": evil}, map[string]any{"const": "b", "title": "B"}}},
	}}})
	elicitTool("link", &mcp.ElicitParams{Mode: "url", Message: evil, URL: "https://example.com/", ElicitationID: "e1"})
	if fail == "initialize" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: evil}
				}
				return next(ctx, method, req)
			}
		})
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if fail == "http" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The go-sdk client quotes the JSON-RPC error of a 400 body.
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32600, "message": evil}})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(b)
		})
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// hostileTmux checks that tmux and the binary are there, and returns a
// tmux configuration that lets a server's OSC 52 write a paste buffer and
// its OSC 2 set the pane title, so that a test can see whether they did.
func hostileTmux(t *testing.T) string {
	t.Helper()
	requireTmux(t)
	buildBinary(t)
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g set-clipboard on\nset -g allow-rename on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return conf
}

// checkHostileShown checks the pane p, whose screen is s, after a hostile
// server's text was drawn: the text around the attacks is shown, the
// pane's title and the paste buffers are untouched, and no control, bidi
// or invisible character is on screen.
func checkHostileShown(t *testing.T, p *pane, s string) {
	t.Helper()
	if !strings.Contains(s, "BEGIN") || !strings.Contains(s, "END") {
		t.Fatalf("the server's text is not shown:\n%s", s)
	}
	if title := p.tmux("display-message", "-p", "-t", "t", "#{pane_title}"); strings.Contains(title, "PWNED") || strings.Contains(title, "C1-TITLE") {
		t.Errorf("the server set the pane title: %q", title)
	}
	if b := p.tmux("list-buffers"); strings.TrimSpace(b) != "" {
		t.Errorf("the server wrote the clipboard (OSC 52): %q", b)
	}
	if strings.ContainsAny(s, "\u009b\u009d\u202e\u2066\u3164\u115f\uffa0\u200b") {
		t.Errorf("a control, bidi or invisible character is on screen: %q", s)
	}
}

// Nothing a server sends acts on the terminal: under tmux (which keeps
// OSC 52 as a paste buffer with set-clipboard on, and the pane title from
// OSC 2), the title does not change, no buffer appears, the pane holds no
// colour or attribute, and no control, bidi or invisible character is
// on screen; the text around them is.
func TestConnectTmuxHostileServer(t *testing.T) {
	conf := hostileTmux(t)
	for _, c := range []struct{ name, fail, tool string }{
		{"initialize error", "initialize", ""},
		{"http 400 body", "http", ""},
		{"tools/call error", "", "rpcerror"},
		{"structuredContent", "", "structured"},
		{"resource_link", "", "resource"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := hostileServer(t, c.fail)
			args := []string{binary(t), "connect", "--protocol", "2025-11-25"}
			if c.tool != "" {
				args = append(args, "--tool", c.tool)
			}
			p := startPaneConf(t, conf, nil, append(args, url)...)
			s := p.waitFor(`\[exit \d\]`)
			checkHostileShown(t, p, s)
			if e := p.tmux("capture-pane", "-p", "-e", "-t", "t"); strings.Contains(e, "\x1b") {
				t.Errorf("the pane holds colours, attributes or a hyperlink: %q", e)
			}
		})
	}
}

// The questions of a hostile server (its name, the message, a field's
// title and description, an option's title, a link's message) drawn by
// the terminal forms: they set no title, write no clipboard, and show no
// control, bidi or invisible character.
func TestConnectTmuxHostileQuestions(t *testing.T) {
	conf := hostileTmux(t)
	url := hostileServer(t, "")
	for _, c := range []struct{ tool, shown string }{{"form", "Fill in the form"}, {"link", "asks you to open a link"}} {
		t.Run(c.tool, func(t *testing.T) {
			p := startPaneConf(t, conf, nil, binary(t), "connect", "--protocol", "2025-11-25", "--tool", c.tool, url)
			p.waitFor(c.shown)
			if c.tool == "form" {
				p.send("Enter")
				p.waitFor(`BEGIN.*END`)
			}
			s := p.screen()
			checkHostileShown(t, p, s)
			if e := p.tmux("capture-pane", "-p", "-e", "-t", "t"); strings.Contains(e, "\x1b]8;") || strings.Contains(e, "\x1b[31m") {
				t.Errorf("the server's hyperlink or colour is on the pane: %q", e)
			}
			// The pane's cleanup ends connect.
		})
	}
}

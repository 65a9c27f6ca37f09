package mcpgo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The protocol generations: a blocking elicitation/create, and input
// requests with a sealed requestState.
var versions = []string{"2025-11-25", mcp.ProtocolVersion20260728}

type contact struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// newFrontEnd returns an Elicitor with cfg on a memory store (both closed
// when t ends), and its front-end on a new mcp-go server with opts.
func newFrontEnd(t *testing.T, cfg *elicit.Config, opts ...server.ServerOption) (*elicit.Elicitor, *server.MCPServer, *mcpgo.Server) {
	t.Helper()
	return newFrontEndWith(t, cfg, nil, opts...)
}

// newFrontEndWith is newFrontEnd with the front-end's options fopts.
func newFrontEndWith(t *testing.T, cfg *elicit.Config, fopts *mcpgo.Options, opts ...server.ServerOption) (*elicit.Elicitor, *server.MCPServer, *mcpgo.Server) {
	t.Helper()
	ev := fronttest.NewElicitor(t, nil, cfg)
	m := server.NewMCPServer("test", "1", opts...)
	return ev, m, mcpgo.New(ev, m, fopts)
}

// newServer serves an mcp-go server with elicitvault's front-end, whose
// tool "add_contact" asks for a contact with elicit.Form.
func newServer(t *testing.T, cfg *elicit.Config) string {
	t.Helper()
	ev, m, f := newFrontEnd(t, cfg, server.WithToolCapabilities(false))
	m.AddTool(mcp.NewTool("add_contact"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := elicit.Form[contact](ctx, "Who should be added?")
		if err != nil {
			return nil, err
		}
		if res.Action != elicit.Accept {
			return mcp.NewToolResultText(string(res.Action)), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("added %s <%s>", res.Content.Name, res.Content.Email)), nil
	})
	srv := httptest.NewServer(f.Handler(nil))
	t.Cleanup(func() {
		ev.Close()
		srv.Close()
	})
	return srv.URL + elicit.MCPPath
}

// user answers elicitations as scripted.
type user struct {
	mu     sync.Mutex
	action mcp.ElicitationResponseAction
	answer map[string]any
	asked  []mcp.ElicitationParams
}

func (u *user) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, req.Params)
	res := &mcp.ElicitationResult{}
	res.Action = u.action
	if u.answer != nil {
		res.Content = u.answer
	}
	return res, nil
}

// dial starts a real mcp-go client on version.
func dial(t *testing.T, url, version string, u *user) *mcpclient.Client {
	t.Helper()
	return dialWith(t, url, version, u)
}

// dialWith starts a real mcp-go client on version whose user is h.
func dialWith(t *testing.T, url, version string, h mcpclient.ElicitationHandler) *mcpclient.Client {
	t.Helper()
	c, _ := mcpgo.StartClient(t, url, nil, version,
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}),
		mcpclient.WithElicitationHandler(h))
	return c
}

func callText(t *testing.T, c *mcpclient.Client, tool string) (string, error) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New(resultText(res))
	}
	return resultText(res), nil
}

// resultText is the text of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestFormMCPGo(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			url := newServer(t, nil)
			for _, tc := range []struct {
				name   string
				action mcp.ElicitationResponseAction
				answer map[string]any
				want   string
			}{
				{"accept", "accept", map[string]any{"name": "Ada", "email": "ada@example.com"}, "added Ada <ada@example.com>"},
				{"decline", "decline", nil, "decline"},
				{"cancel", "cancel", nil, "cancel"},
				{"invalid", "accept", map[string]any{"name": 7, "email": "ada@example.com"}, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					u := &user{action: tc.action, answer: tc.answer}
					c := dial(t, url, v, u)
					got, err := callText(t, c, "add_contact")
					if tc.want == "" {
						if err == nil {
							t.Fatalf("an invalid answer passed: %q", got)
						}
						if strings.Contains(err.Error(), "7") {
							t.Errorf("the error quotes the answer: %v", err)
						}
						return
					}
					if err != nil || got != tc.want {
						t.Fatalf("got %q, %v; want %q", got, err, tc.want)
					}
					if len(u.asked) != 1 || u.asked[0].Message != "Who should be added?" {
						t.Fatalf("asked %+v", u.asked)
					}
				})
			}
		})
	}
}

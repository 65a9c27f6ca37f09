package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mgmcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flowClient is a connected test client of either SDK, for the form flows
// every client runs against serve.
type flowClient interface {
	// reply queues the user's next answer.
	reply(action string, content map[string]any)
	// call calls a tool; a JSON-RPC error fails the test.
	call(t *testing.T, name string, args any) (out string, isErr bool)
	// last is the last elicitation the user was asked.
	last() (message, mode string, schema any)
}

// formFlows runs serve's form-mode flows with c: accept, accept without
// confirming, decline, cancel, a full form (what was sent, validated, and
// the defaults of what was not), and a declined link.
func formFlows(t *testing.T, c flowClient) {
	t.Run("accept", func(t *testing.T) {
		c.reply("accept", map[string]any{"confirm": true})
		if out, _ := c.call(t, "delete_contacts", map[string]any{"count": 3}); out != "Deleted 3 contacts." {
			t.Errorf("got %q", out)
		}
		if msg, mode, _ := c.last(); msg != "Delete 3 contacts? This cannot be undone." || mode != "form" && mode != "" {
			t.Errorf("elicitation: %q (mode %q)", msg, mode)
		}
	})
	t.Run("accept-unconfirmed", func(t *testing.T) {
		c.reply("accept", map[string]any{"confirm": false})
		if out, _ := c.call(t, "delete_contacts", nil); out != "Nothing was deleted." {
			t.Errorf("got %q", out)
		}
	})
	t.Run("decline", func(t *testing.T) {
		c.reply("decline", nil)
		if out, _ := c.call(t, "delete_contacts", nil); out != "Nothing was deleted." {
			t.Errorf("got %q", out)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		c.reply("cancel", nil)
		if out, _ := c.call(t, "register_attendee", nil); out != "Registration cancelled." {
			t.Errorf("got %q", out)
		}
	})
	t.Run("form", func(t *testing.T) {
		c.reply("accept", map[string]any{
			"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04",
			"session_start": "2026-05-05T10:30:00Z", "guests": 2, "seating": "window",
			"diet": "vegan", "workshops": []any{"go", "oauth"}})
		out, isErr := c.call(t, "register_attendee", nil)
		var got map[string]any
		if isErr || !strings.HasPrefix(out, "Registered: ") || json.Unmarshal([]byte(strings.TrimPrefix(out, "Registered: ")), &got) != nil {
			t.Fatalf("got %q (error %v)", out, isErr)
		}
		// What was sent, validated, and the defaults of what was not.
		want := map[string]any{"guests": 2.0, "seating": "window", "diet": "vegan", "budget": 49.5,
			"room": "single", "newsletter": false, "topics": []any{"security"}, "workshops": []any{"go", "oauth"}}
		for k, w := range want {
			if g, _ := json.Marshal(got[k]); string(g) != string(must(json.Marshal(w))) {
				t.Errorf("%s = %s, want %v", k, g, w)
			}
		}
		_, _, s := c.last()
		schema, _ := json.Marshal(s)
		for _, kind := range []string{`"format":"email"`, `"format":"uri"`, `"format":"date"`, `"format":"date-time"`,
			`"oneOf"`, `"enumNames"`, `"anyOf"`, `"minimum"`, `"maxLength"`, `"default"`} {
			if !strings.Contains(string(schema), kind) {
				t.Errorf("the form's schema lacks %s: %s", kind, schema)
			}
		}
	})
	t.Run("url-declined", func(t *testing.T) {
		c.reply("decline", nil)
		if out, _ := c.call(t, "connect_account", nil); out != "Not connected: you declined." {
			t.Errorf("got %q", out)
		}
	})
}

// goFlow is a go-sdk client session as a flowClient.
type goFlow struct {
	ctx context.Context
	c   *goClient
	cs  *mcp.ClientSession
}

func (f goFlow) reply(action string, content map[string]any) {
	f.c.answer(&mcp.ElicitResult{Action: action, Content: content})
}

func (f goFlow) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	out, isErr, err := callText(f.ctx, f.cs, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out, isErr
}

func (f goFlow) last() (string, string, any) {
	asked := f.c.elicitations()
	p := asked[len(asked)-1]
	return p.Message, p.Mode, p.RequestedSchema
}

// mcpgoFlow is an mcp-go client as a flowClient.
type mcpgoFlow struct {
	ctx context.Context
	c   *mcpgoClient
	s   *mcpgoSession
}

func (f mcpgoFlow) reply(action string, content map[string]any) {
	f.c.answer(mgAnswer(action, content))
}

func (f mcpgoFlow) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	out, isErr, err := f.s.call(f.ctx, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out, isErr
}

func (f mcpgoFlow) last() (string, string, any) {
	asked := f.c.elicitations()
	p := asked[len(asked)-1]
	return p.Message, p.Mode, p.RequestedSchema
}

// mgAnswer is an elicitation result of the mcp-go client.
func mgAnswer(action string, content map[string]any) *mgmcp.ElicitationResult {
	r := &mgmcp.ElicitationResult{}
	r.Action = mgmcp.ElicitationResponseAction(action)
	if content != nil {
		r.Content = content
	}
	return r
}

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	mgmcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flowClient is a connected test client of either SDK, for the flows
// every client runs against serve.
type flowClient interface {
	// reply queues the user's next answer.
	reply(action string, content map[string]any)
	// call calls a tool; a JSON-RPC error fails the test.
	call(t *testing.T, name string, args any) (out string, isErr bool)
	// last is the last elicitation the user was asked.
	last() asked
	// browser sets what opens an accepted URL-mode link (nil: nothing).
	browser(visit func(u string))
	// waitComplete waits for notifications/elicitation/complete of id.
	waitComplete(id string)
	// urlRequired calls a tool that must fail with -32042 and returns
	// the URL elicitations of the error, or an error.
	urlRequired(t *testing.T, name string, args any) ([]asked, error)
}

// asked is an elicitation as the user was asked, whatever the SDK.
type asked struct {
	message, mode, url, id string
	schema                 any
}

// urlFlows runs serve's URL-mode flows with c: a link accepted, its page
// visited and used up; and, before 2026-07-28 (legacy), -32042 answered
// through the consent page, then the retry, then -32042 again. base is
// serve's address.
func urlFlows(t *testing.T, c flowClient, base string, legacy bool) {
	t.Run("url", func(t *testing.T) {
		visits := make(chan [2]int, 1)
		c.browser(func(u string) {
			p, cb := browse(t, u, "")
			visits <- [2]int{p, cb}
		})
		defer c.browser(nil)
		c.reply("accept", nil)
		if out, _ := c.call(t, "connect_account", nil); out != "Your Example account is connected." {
			t.Fatalf("got %q", out)
		}
		if v := <-visits; v != [2]int{200, 200} {
			t.Errorf("consent page and callback answered %v", v)
		}
		last := c.last()
		if last.mode != "url" || last.id == "" || !strings.HasPrefix(last.url, base+"/elicit/consent?token=ev2.") {
			t.Fatalf("elicitation: %+v", last)
		}
		c.waitComplete(last.id)

		// The link is used up, and its page says so.
		if p, _ := browse(t, last.url, ""); p != http.StatusGone {
			t.Errorf("a used link: consent page %d, want 410", p)
		}
	})
	t.Run("url-required", func(t *testing.T) {
		args := map[string]any{"url_required_error": true}
		if !legacy {
			// On 2026-07-28 a tool does not fail for URL mode: the
			// elicitation is an input request like any other.
			c.browser(func(u string) { browse(t, u, "") })
			defer c.browser(nil)
			c.reply("accept", nil)
			if out, _ := c.call(t, "connect_account", args); out != "Your Example account is connected." {
				t.Fatalf("got %q", out)
			}
			return
		}
		els, err := c.urlRequired(t, "connect_account", args)
		if err != nil || len(els) != 1 || els[0].mode != "url" {
			t.Fatalf("got %+v, %v; want the error -32042 with one URL elicitation", els, err)
		}
		if p, cb := browse(t, els[0].url, ""); p != 200 || cb != 200 {
			t.Fatalf("consent page %d, callback %d", p, cb)
		}
		c.waitComplete(els[0].id)
		if out, _ := c.call(t, "connect_account", args); out != "Your Example account is connected." {
			t.Fatalf("retry: got %q", out)
		}
		// The completion counts once: the next call asks again.
		if _, err := c.urlRequired(t, "connect_account", args); err != nil {
			t.Errorf("third call: %v, want -32042 again", err)
		}
	})
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
		if a := c.last(); a.message != "Delete 3 contacts? This cannot be undone." || a.mode != "form" && a.mode != "" {
			t.Errorf("elicitation: %+v", a)
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
		schema, _ := json.Marshal(c.last().schema)
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

// noRPCError returns the text of a call of the tool name and whether it
// is a tool error; a JSON-RPC error, err, fails t.
func noRPCError(t *testing.T, name, out string, isErr bool, err error) (string, bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out, isErr
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
	return noRPCError(t, name, out, isErr, err)
}

func (f goFlow) last() asked {
	all := f.c.elicitations()
	return goAsked(all[len(all)-1])
}

func goAsked(p *mcp.ElicitParams) asked {
	return asked{message: p.Message, mode: p.Mode, url: p.URL, id: p.ElicitationID, schema: p.RequestedSchema}
}

func (f goFlow) browser(visit func(string)) { f.c.setVisit(visit) }
func (f goFlow) waitComplete(id string)     { f.c.waitComplete(id) }

func (f goFlow) urlRequired(t *testing.T, name string, args any) ([]asked, error) {
	_, _, err := callText(f.ctx, f.cs, name, args)
	if errCode(err) != mcp.CodeURLElicitationRequired {
		return nil, fmt.Errorf("got %v, want the error -32042", err)
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(errData(err), &data); err != nil {
		return nil, fmt.Errorf("-32042 data: %s", errData(err))
	}
	var els []asked
	for _, p := range data.Elicitations {
		els = append(els, goAsked(p))
	}
	return els, nil
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
	return noRPCError(t, name, out, isErr, err)
}

func (f mcpgoFlow) last() asked {
	all := f.c.elicitations()
	return mgAsked(all[len(all)-1])
}

func mgAsked(p mgmcp.ElicitationParams) asked {
	return asked{message: p.Message, mode: p.Mode, url: p.URL, id: p.ElicitationID, schema: p.RequestedSchema}
}

func (f mcpgoFlow) browser(visit func(string)) { f.c.setVisit(visit) }
func (f mcpgoFlow) waitComplete(id string)     { f.c.waitComplete(id) }

func (f mcpgoFlow) urlRequired(t *testing.T, name string, args any) ([]asked, error) {
	_, _, err := f.s.call(f.ctx, name, args)
	var e mgmcp.URLElicitationRequiredError
	if !errors.As(err, &e) {
		return nil, fmt.Errorf("got %v, want the error -32042", err)
	}
	var els []asked
	for _, p := range e.Elicitations {
		els = append(els, mgAsked(p))
	}
	return els, nil
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

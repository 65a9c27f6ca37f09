package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goVersions are the protocol versions the go-sdk client is tested on
// against serve: its default (2026-07-28, where elicitations become input
// requests and the tool call is retried with the answers) and 2025-11-25
// (elicitation/create in the middle of the call).
var goVersions = []struct{ name, version, want string }{
	{"default", "", "2026-07-28"},
	{"2025-11-25", "2025-11-25", "2025-11-25"},
}

// TestServeGoSDK drives every flow of serve's tools with the go-sdk client
// over Streamable HTTP: accept, decline, cancel and invalid content in form
// mode, URL mode with its completion notification, and -32042.
func TestServeGoSDK(t *testing.T) {
	srv := startServe(t, nil)
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			c := newGoClient(t)
			cs := c.connect(srv.mcpURL(), v.version)
			if got := cs.InitializeResult().ProtocolVersion; got != v.want {
				t.Fatalf("negotiated %s, want %s", got, v.want)
			}
			ctx := t.Context()
			call := func(t *testing.T, name string, args any) (string, bool) {
				t.Helper()
				out, isErr, err := callText(ctx, cs, name, args)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return out, isErr
			}
			yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}

			t.Run("accept", func(t *testing.T) {
				c.answer(yes)
				if out, _ := call(t, "delete_contacts", map[string]any{"count": 3}); out != "Deleted 3 contacts." {
					t.Errorf("got %q", out)
				}
				asked := c.elicitations()
				last := asked[len(asked)-1]
				if last.Message != "Delete 3 contacts? This cannot be undone." || last.Mode != "form" && last.Mode != "" {
					t.Errorf("elicitation: %+v", last)
				}
			})
			t.Run("accept-unconfirmed", func(t *testing.T) {
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": false}})
				if out, _ := call(t, "delete_contacts", nil); out != "Nothing was deleted." {
					t.Errorf("got %q", out)
				}
			})
			t.Run("decline", func(t *testing.T) {
				c.answer(&mcp.ElicitResult{Action: "decline"})
				if out, _ := call(t, "delete_contacts", nil); out != "Nothing was deleted." {
					t.Errorf("got %q", out)
				}
			})
			t.Run("cancel", func(t *testing.T) {
				c.answer(&mcp.ElicitResult{Action: "cancel"})
				if out, _ := call(t, "register_attendee", nil); out != "Registration cancelled." {
					t.Errorf("got %q", out)
				}
			})
			t.Run("invalid", func(t *testing.T) {
				// Content the go-sdk client lets through (it checks types,
				// not formats) and elicitvault refuses, naming the path.
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{
					"name": "Ada", "email": "not an address", "arrival": "2026-05-04"}})
				out, isErr := call(t, "register_attendee", nil)
				if !isErr || !strings.Contains(out, "/email") || strings.Contains(out, "not an address") {
					t.Errorf("got %q (error %v), want an error naming /email without the value", out, isErr)
				}
				// Content the client itself refuses to send.
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": "yes"}})
				out, isErr, err := callText(ctx, cs, "delete_contacts", nil)
				switch {
				case v.version == "":
					// On 2026-07-28 the client fails the call itself.
					if err == nil {
						t.Errorf("got %q, want the client's error", out)
					}
				case !isErr || !strings.Contains(out, "-32602") || strings.Contains(out, "yes"):
					t.Errorf("got %q (error %v, %v), want a tool error with the client's code -32602", out, isErr, err)
				}
			})
			t.Run("form", func(t *testing.T) {
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{
					"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04",
					"session_start": "2026-05-05T10:30:00Z", "guests": 2, "seating": "window",
					"diet": "vegan", "workshops": []any{"go", "oauth"}}})
				out, isErr := call(t, "register_attendee", nil)
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
				asked := c.elicitations()
				schema, _ := json.Marshal(asked[len(asked)-1].RequestedSchema)
				for _, kind := range []string{`"format":"email"`, `"format":"uri"`, `"format":"date"`, `"format":"date-time"`,
					`"oneOf"`, `"enumNames"`, `"anyOf"`, `"minimum"`, `"maxLength"`, `"default"`} {
					if !strings.Contains(string(schema), kind) {
						t.Errorf("the form's schema lacks %s: %s", kind, schema)
					}
				}
			})
			t.Run("url", func(t *testing.T) {
				visits := make(chan [2]int, 1)
				c.setVisit(func(u string) {
					p, cb := browse(t, u, "")
					visits <- [2]int{p, cb}
				})
				defer c.setVisit(nil)
				c.answer(&mcp.ElicitResult{Action: "accept"})
				if out, _ := call(t, "connect_account", nil); out != "Your Example account is connected." {
					t.Fatalf("got %q", out)
				}
				if v := <-visits; v != [2]int{200, 200} {
					t.Errorf("consent page and callback answered %v", v)
				}
				asked := c.elicitations()
				last := asked[len(asked)-1]
				if last.Mode != "url" || last.ElicitationID == "" || !strings.HasPrefix(last.URL, srv.base+"/elicit/consent?token=ev2.") {
					t.Fatalf("elicitation: %+v", last)
				}
				c.waitComplete(last.ElicitationID)

				// The link is used up, and its page says so.
				if p, _ := browse(t, last.URL, ""); p != http.StatusGone {
					t.Errorf("a used link: consent page %d, want 410", p)
				}
			})
			t.Run("url-declined", func(t *testing.T) {
				c.answer(&mcp.ElicitResult{Action: "decline"})
				if out, _ := call(t, "connect_account", nil); out != "Not connected: you declined." {
					t.Errorf("got %q", out)
				}
			})
			t.Run("url-required", func(t *testing.T) {
				args := map[string]any{"url_required_error": true}
				if v.version == "" {
					// On 2026-07-28 a tool does not fail for URL mode: the
					// elicitation is an input request like any other.
					c.setVisit(func(u string) { browse(t, u, "") })
					defer c.setVisit(nil)
					c.answer(&mcp.ElicitResult{Action: "accept"})
					if out, _ := call(t, "connect_account", args); out != "Your Example account is connected." {
						t.Fatalf("got %q", out)
					}
					return
				}
				_, _, err := callText(ctx, cs, "connect_account", args)
				if errCode(err) != mcp.CodeURLElicitationRequired {
					t.Fatalf("got %v, want the error -32042", err)
				}
				var data struct {
					Elicitations []*mcp.ElicitParams `json:"elicitations"`
				}
				if json.Unmarshal(errData(err), &data) != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" {
					t.Fatalf("-32042 data: %s", errData(err))
				}
				el := data.Elicitations[0]
				if p, cb := browse(t, el.URL, ""); p != 200 || cb != 200 {
					t.Fatalf("consent page %d, callback %d", p, cb)
				}
				c.waitComplete(el.ElicitationID)
				if out, _ := call(t, "connect_account", args); out != "Your Example account is connected." {
					t.Fatalf("retry: got %q", out)
				}
				// The completion counts once: the next call asks again.
				if _, _, err := callText(ctx, cs, "connect_account", args); errCode(err) != mcp.CodeURLElicitationRequired {
					t.Errorf("third call: got %v, want -32042 again", err)
				}
			})
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

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
			f := goFlow{ctx, c, cs}
			call := f.call
			formFlows(t, f)
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
				if last.Mode != "url" || last.ElicitationID == "" || !strings.HasPrefix(last.URL, srv.base+"/elicit/consent?token=ev1.") {
					t.Fatalf("elicitation: %+v", last)
				}
				c.waitComplete(last.ElicitationID)

				// The link is used up, and its page says so.
				if p, _ := browse(t, last.URL, ""); p != http.StatusGone {
					t.Errorf("a used link: consent page %d, want 410", p)
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

//lint:file-ignore SA1019 the browser form is announced through MCP logging, deprecated in 2026-07-28 but still delivered

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/webdriver"
)

// muteClient connects a go-sdk client without the elicitation capability
// to endpoint over Streamable HTTP, with protocol version ("" for the
// go-sdk's default); opts may add handlers.
func muteClient(t *testing.T, endpoint, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "integration-mute", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listsFallbackTool(t *testing.T, cs *mcp.ClientSession) bool {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "sendElicitationResult" })
}

// TestServeLLMFallback drives the LLM-mediated fallback of
// `elicitvault serve` (its default --fallback llm) with go-sdk clients
// that cannot elicit, over Streamable HTTP, on the go-sdk's default
// protocol (a stateless handler) and on 2025-11-25 (sessions): the tool
// listed only to them; accept, decline, cancel, a confirmation; invalid
// content refused naming the path, then a corrected answer; concurrent
// answers of which one continues the tool; another session's answer
// refused.
func TestServeLLMFallback(t *testing.T) {
	srv := startServe(t, nil)
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			ctx := t.Context()
			cs := muteClient(t, srv.mcpURL(), v.version, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != v.want {
				t.Fatalf("negotiated %s, want %s", got, v.want)
			}
			call := func(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
				t.Helper()
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return res
			}
			answer := func(t *testing.T, cs *mcp.ClientSession, id, action string, content map[string]any) *mcp.CallToolResult {
				t.Helper()
				args := map[string]any{"elicitId": id, "action": action}
				if content != nil {
					args["content"] = content
				}
				return call(t, cs, "sendElicitationResult", args)
			}
			ada := map[string]any{"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04"}

			t.Run("listed", func(t *testing.T) {
				if !listsFallbackTool(t, cs) {
					t.Errorf("%s not listed to a client that cannot elicit", "sendElicitationResult")
				}
				able := newGoClient(t).connect(srv.mcpURL(), v.version)
				if listsFallbackTool(t, able) {
					t.Errorf("%s listed to a client that elicits", "sendElicitationResult")
				}
				res := answer(t, able, "anything", "accept", map[string]any{})
				if !res.IsError || !strings.Contains(fronttest.Text(res), "only for clients that cannot elicit") {
					t.Errorf("called from a client that elicits: %q", fronttest.Text(res))
				}
			})
			t.Run("accept", func(t *testing.T) {
				res := call(t, cs, "register_attendee", nil)
				id := pendingID(t, res)
				if !strings.Contains(fronttest.Text(res), "sendElicitationResult") || !strings.Contains(fronttest.Text(res), "Register for MCP Dev Days") {
					t.Errorf("instructions: %q", fronttest.Text(res))
				}
				out := fronttest.Text(answer(t, cs, id, "accept", ada))
				if !strings.HasPrefix(out, "Registered: ") || !strings.Contains(out, `"name":"Ada"`) || !strings.Contains(out, `"room":"single"`) {
					t.Errorf("got %q", out)
				}
			})
			// One answer to one question: the tool's text.
			for _, tc := range []struct {
				name, tool, action string
				content            map[string]any
				want               string
			}{
				{"confirm", "subscribe_newsletter", "accept", map[string]any{"confirm": true}, "Subscribed."},
				{"unconfirmed", "subscribe_newsletter", "accept", map[string]any{"confirm": false}, "Not subscribed."},
				{"decline", "subscribe_newsletter", "decline", nil, "Not subscribed."},
				{"cancel", "register_attendee", "cancel", nil, "Registration cancelled."},
			} {
				t.Run(tc.name, func(t *testing.T) {
					id := pendingID(t, call(t, cs, tc.tool, nil))
					if out := fronttest.Text(answer(t, cs, id, tc.action, tc.content)); out != tc.want {
						t.Errorf("got %q, want %q", out, tc.want)
					}
				})
			}
			t.Run("destructive-confirmation-refuses-the-model", func(t *testing.T) {
				// delete_contacts allows only the browser form: the model
				// is never asked to confirm it, and nothing is pending.
				res := call(t, cs, "delete_contacts", map[string]any{"count": 3})
				out := fronttest.Text(res)
				if !strings.HasPrefix(out, "Nothing was deleted: deleting contacts needs a confirmation from the user") {
					t.Errorf("got %q", out)
				}
				if res.Meta["elicitationPending"] != nil || strings.Contains(out, "sendElicitationResult") {
					t.Errorf("delete_contacts asked the model: %q", out)
				}
			})
			t.Run("invalid-then-corrected", func(t *testing.T) {
				id := pendingID(t, call(t, cs, "register_attendee", nil))
				bad := map[string]any{"name": "Ada", "email": "not an address", "arrival": "2026-05-04"}
				res := answer(t, cs, id, "accept", bad)
				if out := fronttest.Text(res); !res.IsError || !strings.Contains(out, "/email") || strings.Contains(out, "not an address") {
					t.Errorf("got %q (error %v), want an error naming /email without the value", out, res.IsError)
				}
				if out := fronttest.Text(answer(t, cs, id, "accept", ada)); !strings.HasPrefix(out, "Registered: ") {
					t.Errorf("corrected: got %q", out)
				}
			})
			t.Run("double-submission", func(t *testing.T) {
				id := pendingID(t, call(t, cs, "subscribe_newsletter", nil))
				const n = 8
				results := make(chan *mcp.CallToolResult, n)
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { results <- answer(t, cs, id, "accept", map[string]any{"confirm": true}) })
				}
				wg.Wait()
				close(results)
				// A refused answer never reaches the tool, and the same
				// answer sent again gets the first run's result, marked
				// as a replay: each other result is one run.
				ran := 0
				for res := range results {
					switch out := fronttest.Text(res); {
					case out == "Subscribed." && res.Meta["elicitationReplayed"] != nil:
						// the same answer again: the first run's result
					case out == "Subscribed.":
						ran++
					case res.IsError && (strings.Contains(out, "the elicitation was already answered") || strings.Contains(out, elicit.ErrUnknownElicitation.Error())):
					default:
						t.Errorf("unexpected result %q", out)
					}
				}
				if ran != 1 {
					t.Errorf("the tool ran %d times for %d answers, want once", ran, n)
				}
			})
			t.Run("foreign-session", func(t *testing.T) {
				if v.version == "" {
					// A stateless server (the only kind that serves
					// 2026-07-28 over HTTP) has no sessions: state is bound
					// to the authenticated user, and serve has none.
					t.Skip("no sessions on 2026-07-28 over HTTP")
				}
				other := muteClient(t, srv.mcpURL(), v.version, nil)
				id := pendingID(t, call(t, cs, "subscribe_newsletter", nil))
				res := answer(t, other, id, "accept", map[string]any{"confirm": true})
				if !res.IsError || !strings.Contains(fronttest.Text(res), elicit.ErrUnknownElicitation.Error()) {
					t.Errorf("another session's answer: %q (error %v)", fronttest.Text(res), res.IsError)
				}
				if out := fronttest.Text(answer(t, cs, id, "decline", nil)); out != "Not subscribed." {
					t.Errorf("the owner's answer: %q", out)
				}
			})
		})
	}
}

// TestServeBrowserFallback drives the browser form of `elicitvault serve
// --fallback browser` in a headless Chromium, for a go-sdk client that
// cannot elicit but shows log messages: the page shows the verification
// code of the log message; every field kind of register_attendee is
// filled; the tool gets the validated content; a second submission gets
// 409, one without the nonce 403. It skips without chromium and
// chromedriver unless ELICITVAULT_REQUIRE_BROWSER=1.
func TestServeBrowserFallback(t *testing.T) { serveBrowserFallback(t) }

// TestServeSDKMCPGoBrowserFallback: the same on serve --sdk mcp-go.
func TestServeSDKMCPGoBrowserFallback(t *testing.T) { serveBrowserFallback(t, "--sdk", "mcp-go") }

func serveBrowserFallback(t *testing.T, args ...string) {
	wd := webdriver.Start(t)
	srv := startServe(t, nil, append([]string{"--fallback", "browser"}, args...)...)
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			cs, logs, params := loggingClient(t, srv.mcpURL(), v.version, "register_attendee")
			if listsFallbackTool(t, cs) {
				t.Errorf("%s listed without the LLM-mediated fallback", "sendElicitationResult")
			}
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
				}
				done <- res
			}()
			var msg string
			select {
			case msg = <-logs:
			case <-time.After(15 * time.Second):
				t.Fatal("no log message announced the form")
			}
			link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/f/\S+`).FindString(msg)
			code := regexp.MustCompile(`[A-Z]+-[A-Z]+-\d{2}`).FindString(msg)
			if link == "" || code == "" {
				t.Fatalf("log message without link or code: %q", msg)
			}

			wd.Navigate(link)
			if got := wd.Text("#code"); got != code {
				t.Fatalf("page shows code %q, the log message said %q", got, code)
			}
			wd.TypeInto("#f-name", "Ada Lovelace")
			wd.TypeInto("#f-email", "ada@example.com")
			wd.TypeInto("#f-website", "https://example.com/ada")
			wd.SetValue("#f-arrival", "2026-05-04")
			wd.TypeInto("#f-session_start", "2026-05-05T10:00:00Z")
			wd.Clear("#f-guests")
			wd.TypeInto("#f-guests", "2")
			wd.Clear("#f-budget")
			wd.TypeInto("#f-budget", "75.5")
			wd.Click("#f-newsletter")
			wd.Click(`#f-room option[value="suite"]`)
			wd.Click(`#f-seating option[value="window"]`)
			wd.Click(`#f-diet option[value="vegan"]`)
			wd.Click(`#f-topics input[value="protocols"]`)
			wd.Click(`#f-workshops input[value="go"]`)
			wd.Click("#accept")

			var res *mcp.CallToolResult
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the tool did not return; page: %v", wd.Exec(`return document.body.innerText`))
			}
			out, ok := strings.CutPrefix(fronttest.Text(res), "Registered: ")
			var got map[string]any
			if !ok || res.IsError || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("tool result %q", fronttest.Text(res))
			}
			want := map[string]any{
				"name": "Ada Lovelace", "email": "ada@example.com", "website": "https://example.com/ada",
				"arrival": "2026-05-04", "session_start": "2026-05-05T10:00:00Z", "guests": 2.0, "budget": 75.5,
				"newsletter": true, "room": "suite", "seating": "window", "diet": "vegan",
				"topics": []any{"security", "protocols"}, "workshops": []any{"go"},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the tool got %v\nwant %v", got, want)
			}

			u, _ := url.Parse(link)
			nonce := u.Query().Get("n")
			u.RawQuery = ""
			post := func(v url.Values) int {
				resp, err := http.PostForm(u.String(), v)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			again := url.Values{"_action": {"accept"}, "name": {"Eve"}, "email": {"eve@example.com"}, "arrival": {"2026-05-04"}}
			if code := post(again); code != http.StatusForbidden {
				t.Errorf("without the nonce: %d, want 403", code)
			}
			again.Set("_nonce", nonce)
			if code := post(again); code != http.StatusConflict {
				t.Errorf("second submission: %d, want 409", code)
			}
		})
	}
}

// loggingClient connects a client without elicitation that shows log
// messages at info (set for the session, or per request on 2026-07-28,
// version ""), and returns it, the messages it receives and the params
// of a call of tool that carry the level.
func loggingClient(t *testing.T, url, version, tool string) (*mcp.ClientSession, chan string, *mcp.CallToolParams) {
	t.Helper()
	logs := make(chan string, 4)
	cs := muteClient(t, url, version, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			logs <- s
		},
	})
	params := &mcp.CallToolParams{Name: tool}
	if version == "" {
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "info"} // per request on 2026-07-28
	} else if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	return cs, logs, params
}

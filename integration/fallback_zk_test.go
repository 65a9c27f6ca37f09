//lint:file-ignore SA1019 the browser form is announced through MCP logging, deprecated in 2026-07-28 but still delivered

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/elicitvault/elicitvault/keyring"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
)

// The known values of the fallbacks' zero-knowledge test.
const (
	zkfSessionModel   = "zkf-session-model-3c9e51"
	zkfSubjectModel   = "zkf-subject-dana@example.org"
	zkfSessionBrowser = "zkf-session-browser-7a0d42"
	zkfSubjectBrowser = "zkf-subject-eli@example.org"
	zkfMessage1       = "zkf-message: which card for the 71c2 order?"
	zkfMessage2       = "zkf-message: ship the 71c2 order to which city?"
	zkfMessageBrowser = "zkf-message: which locker for the 5d0b parcel?"
	zkfField          = "zkffield_delivery_detail_w3"
	zkfAnswer1        = "zkf-answer-visa-ending-4242-91"
	zkfAnswer2        = "zkf-answer-city-reykjavik-e7"
	zkfAnswerBrowser  = "zkf-answer-locker-b17-northgate"
	zkfArgument       = "zkf-argument-order-71c2-gift"
	zkfState          = "zkf-state-draft-5501-created"
)

// zkfForm is the form of the test: its field name is a known value.
type zkfForm struct {
	Detail string `json:"zkffield_delivery_detail_w3"`
}

// TestZeroKnowledgeFallbacks drives both fallbacks over each backend with
// known session IDs, subjects, messages, arguments, state and answers:
// an LLM-mediated elicitation pending after a first answer (so that its
// sealed record holds the tool's arguments, the handler's state and that
// answer), and a browser form pending; then both answered. At each stage
// no known value, elicitation ID or form URL may be in the backend's keys,
// values or channel names, or on the wire to it, in any encoding.
func TestZeroKnowledgeFallbacks(t *testing.T) {
	zkBackends(t, func(t *testing.T, b *zkBackend) {
		keys, err := ring.New([]byte(secretA), nil)
		if err != nil {
			t.Fatal(err)
		}
		forbidden := &forbiddenValues{values: []string{
			zkfSessionModel, zkfSubjectModel, zkfSessionBrowser, zkfSubjectBrowser,
			zkfMessage1, zkfMessage2, zkfMessageBrowser, zkfField,
			zkfAnswer1, zkfAnswer2, zkfAnswerBrowser, zkfArgument, zkfState,
		}}
		forbid, snapshot := forbidden.add, forbidden.snapshot

		ev, err := elicit.New((*keyring.Keyring)(keys), b.Store, &elicit.Config{
			Fallbacks: []elicit.Fallback{elicit.LLMMediated, elicit.BrowserForm},
			Hooks: []elicit.Hooks{{BeforeRequest: func(_ context.Context, r *elicit.Request) error {
				forbid(r.ID)
				return nil
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer ev.Close()
		server := mcp.NewServer(&mcp.Implementation{Name: "zkf", Version: "1"}, nil)
		ev.Install(server)
		type orderArgs struct {
			Note string `json:"note"`
		}
		mcp.AddTool(server, &mcp.Tool{Name: "order"}, func(ctx context.Context, req *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, any, error) {
			if err := elicit.SaveState(ctx, zkfState); err != nil {
				return nil, nil, err
			}
			card, err := elicit.Form[zkfForm](ctx, zkfMessage1)
			if err != nil {
				return nil, nil, err
			}
			city, err := elicit.Form[zkfForm](ctx, zkfMessage2)
			if err != nil {
				return nil, nil, err
			}
			var state string
			if _, err := elicit.LoadState(ctx, &state); err != nil {
				return nil, nil, err
			}
			return text(strings.Join([]string{in.Note, card.Content.Detail, city.Content.Detail, state}, " ")), nil, nil
		})
		addTextTool(server, "locker", func(ctx context.Context) (string, error) {
			res, err := elicit.Form[zkfForm](ctx, zkfMessageBrowser, elicit.WithFallbacks(elicit.BrowserForm))
			if err != nil {
				return "", err
			}
			return string(res.Action) + " " + res.Content.Detail, nil
		})

		// The LLM-mediated elicitation: asked, answered once, asked again.
		model := connectAs(t, server, zkfSessionModel, zkfSubjectModel, &mcp.ClientOptions{})
		call := func(name string, args any) *mcp.CallToolResult {
			t.Helper()
			res, err := model.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		first := pendingID(t, call("order", map[string]any{"note": zkfArgument}))
		second := pendingID(t, call("sendElicitationResult", map[string]any{"elicitId": first, "action": "accept", "content": map[string]any{zkfField: zkfAnswer1}}))

		// The browser form, announced in a log message.
		announced := make(chan string, 1)
		browser := connectAs(t, server, zkfSessionBrowser, zkfSubjectBrowser, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				s, _ := req.Params.Data.(string)
				announced <- s
			},
		})
		if err := browser.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "notice"}); err != nil {
			t.Fatal(err)
		}
		lockerDone := make(chan string, 1)
		go func() {
			s, err := callTool(browser, "locker")
			if err != nil {
				s = err.Error()
			}
			lockerDone <- s
		}()
		var formURL *url.URL
		select {
		case s := <-announced:
			m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/f/\S+`).FindString(s)
			if formURL, err = url.Parse(m); m == "" || err != nil {
				t.Fatalf("no form URL in the log message")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the browser form was not announced")
		}
		nonce := formURL.Query().Get("n")
		forbid(formURL.String(), nonce, strings.TrimPrefix(formURL.Path, "/f/"))

		b.CheckNoLeaks(t, "pending", snapshot())

		// Both answered.
		formURL.RawQuery = ""
		resp, err := http.PostForm(formURL.String(), url.Values{"_nonce": {nonce}, "_action": {"accept"}, zkfField: {zkfAnswerBrowser}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("browser form: status %d", resp.StatusCode)
		}
		select {
		case s := <-lockerDone:
			if s != "accept "+zkfAnswerBrowser {
				t.Fatalf("locker: %q", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the browser form's tool did not return")
		}
		res := call("sendElicitationResult", map[string]any{"elicitId": second, "action": "accept", "content": map[string]any{zkfField: zkfAnswer2}})
		if got := fronttest.Text(res); res.IsError || got != fmt.Sprint(zkfArgument, " ", zkfAnswer1, " ", zkfAnswer2, " ", zkfState) {
			t.Fatalf("order: %q", got)
		}
		b.CheckNoLeaks(t, "answered", snapshot())
	})
}

// pendingID returns the elicitation ID of the LLM-mediated elicitation a
// tool result hands to the model.
func pendingID(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	raw, _ := json.Marshal(res.Meta["elicitationPending"])
	var p struct {
		ID string `json:"elicitationId"`
	}
	if json.Unmarshal(raw, &p) != nil || p.ID == "" || res.IsError {
		t.Fatalf("no pending elicitation in the result: %s", fronttest.Text(res))
	}
	return p.ID
}

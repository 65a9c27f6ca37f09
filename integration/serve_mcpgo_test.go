package integration

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	evclient "github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/webdriver"
	mcpgoclient "github.com/elicitvault/elicitvault/mcpgo/client"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
)

// TestServeMCPGoClient drives serve's tools with the mark3labs/mcp-go
// client over Streamable HTTP on both protocol generations: accept,
// decline, cancel and invalid content in form mode, URL mode through the
// consent page with its completion notification, and -32042.
func TestServeMCPGoClient(t *testing.T) {
	serveMCPGoClient(t, startServe(t, nil), mcpgoVersions)
}

func serveMCPGoClient(t *testing.T, srv *serveProc, versions []string) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			c := newMCPGoClient(t)
			s := c.connect(srv.mcpURL(), v)
			if s.version != v {
				t.Fatalf("negotiated %s, want %s", s.version, v)
			}
			ctx := t.Context()
			f := mcpgoFlow{ctx, c, s}
			call := f.call
			formFlows(t, f)
			t.Run("invalid", func(t *testing.T) {
				// The mcp-go client checks nothing: elicitvault refuses
				// the content, naming the path and not the value.
				c.answer(mgAnswer("accept", map[string]any{"name": "Ada", "email": "not an address", "arrival": "2026-05-04"}))
				out, isErr := call(t, "register_attendee", nil)
				if !isErr || !strings.Contains(out, "/email") || strings.Contains(out, "not an address") {
					t.Errorf("got %q (error %v), want an error naming /email without the value", out, isErr)
				}
				c.answer(mgAnswer("accept", map[string]any{"confirm": "yes"}))
				out, isErr = call(t, "delete_contacts", nil)
				if !isErr || !strings.Contains(out, "/confirm") || strings.Contains(out, "yes") {
					t.Errorf("got %q (error %v), want an error naming /confirm without the value", out, isErr)
				}
			})
			urlFlows(t, f, srv.base, v == "2025-11-25")
		})
	}
}

// attendeeUI is a UI of elicit/client that fills in serve's
// register_attendee form with the email it is given.
type attendeeUI struct {
	email string
	mu    sync.Mutex
	forms int
}

func (u *attendeeUI) Form(_ context.Context, f *evclient.FormRequest) (*evclient.Answer, error) {
	u.mu.Lock()
	u.forms++
	u.mu.Unlock()
	return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{"name": "Ada", "email": u.email, "arrival": "2026-05-04"}}, nil
}

// TestServeMCPGoClientHandler: an mcp-go client answering with
// mcpgo/client's Handler against serve: a valid form goes through; an
// answer the form refuses is never sent (serve would refuse it too, but
// the value does not leave the client).
func TestServeMCPGoClientHandler(t *testing.T) {
	srv := startServe(t, nil)
	for _, v := range mcpgoVersions {
		t.Run(v, func(t *testing.T) {
			ctx := t.Context()
			ok := &attendeeUI{email: "ada@example.com"}
			h := mcpgoclient.New(&evclient.Options{Form: ok})
			s := newMCPGoClient(t).connectWith(srv.mcpURL(), v, h.Options(mgmcp.ClientCapabilities{})...)
			out, isErr, err := s.call(ctx, "register_attendee", nil)
			if err != nil || isErr || !strings.HasPrefix(out, "Registered: ") {
				t.Fatalf("got %q (error %v, %v)", out, isErr, err)
			}

			bad := &attendeeUI{email: "not an address"}
			h = mcpgoclient.New(&evclient.Options{Form: bad})
			s = newMCPGoClient(t).connectWith(srv.mcpURL(), v, h.Options(mgmcp.ClientCapabilities{})...)
			out, isErr, err = s.call(ctx, "register_attendee", nil)
			if err == nil && !isErr {
				t.Fatalf("an invalid answer went through: %q", out)
			}
			if strings.Contains(out, "not an address") || err != nil && strings.Contains(err.Error(), "not an address") {
				t.Errorf("the value is in the error: %q, %v", out, err)
			}
			// Asked again up to MaxAttempts within one elicitation: the
			// Handler refused each answer itself (serve asks once per call).
			if bad.forms != 3 {
				t.Errorf("the form was asked %d times, want 3 (MaxAttempts)", bad.forms)
			}
		})
	}
}

// TestServeMCPGoLLMFallback: an mcp-go client that cannot elicit gets
// serve's LLM-mediated fallback on both protocol generations: the tool
// lists sendElicitationResult, a call leaves an elicitation pending with
// instructions for the model, and the model's answer through the tool
// finishes it; a destructive confirmation is never asked of the model.
func TestServeMCPGoLLMFallback(t *testing.T) {
	serveMCPGoLLMFallback(t, startServe(t, nil))
}

func serveMCPGoLLMFallback(t *testing.T, srv *serveProc) {
	for _, v := range mcpgoVersions {
		t.Run(v, func(t *testing.T) {
			ctx := t.Context()
			s := newMCPGoClient(t).connectWith(srv.mcpURL(), v)
			if s.version != v {
				t.Fatalf("negotiated %s, want %s", s.version, v)
			}
			tools, err := s.c.ListTools(ctx, mgmcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, tool := range tools.Tools {
				listed = listed || tool.Name == "sendElicitationResult"
			}
			if !listed {
				t.Fatalf("%s not listed to a client that cannot elicit", "sendElicitationResult")
			}
			pending := func(t *testing.T, name string) string {
				t.Helper()
				res, err := s.result(ctx, name, nil)
				if err != nil || res.IsError || res.Meta == nil {
					t.Fatalf("%s: %v (%q)", name, err, mgText(res))
				}
				raw, _ := json.Marshal(res.Meta.AdditionalFields["elicitationPending"])
				var p struct {
					ID string `json:"elicitationId"`
				}
				if json.Unmarshal(raw, &p) != nil || p.ID == "" || !strings.Contains(mgText(res), "sendElicitationResult") {
					t.Fatalf("no pending elicitation in %q", mgText(res))
				}
				return p.ID
			}
			answer := func(t *testing.T, id, action string, content map[string]any) string {
				t.Helper()
				args := map[string]any{"elicitId": id, "action": action}
				if content != nil {
					args["content"] = content
				}
				out, isErr, err := s.call(ctx, "sendElicitationResult", args)
				if err != nil || isErr {
					t.Fatalf("%s: %q, %v", "sendElicitationResult", out, err)
				}
				return out
			}
			id := pending(t, "register_attendee")
			out := answer(t, id, "accept", map[string]any{"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04"})
			if !strings.HasPrefix(out, "Registered: ") || !strings.Contains(out, `"name":"Ada"`) {
				t.Errorf("accept: got %q", out)
			}
			if out := answer(t, pending(t, "subscribe_newsletter"), "decline", nil); out != "Not subscribed." {
				t.Errorf("decline: got %q", out)
			}
			out, _, err = s.call(ctx, "delete_contacts", map[string]any{"count": 3})
			if err != nil || !strings.HasPrefix(out, "Nothing was deleted: deleting contacts needs a confirmation from the user") {
				t.Errorf("delete_contacts: got %q, %v", out, err)
			}
		})
	}
}

// TestServeMCPGoClientChromium: URL mode with the mcp-go client on both
// protocol generations, the user choosing on serve's consent page in
// Chromium: Accept connects the account, Decline does not.
func TestServeMCPGoClientChromium(t *testing.T) {
	serveMCPGoChromium(t, webdriver.Start(t), startServe(t, nil), mcpgoVersions)
}

func serveMCPGoChromium(t *testing.T, wd *webdriver.Driver, srv *serveProc, versions []string) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			c := newMCPGoClient(t)
			s := c.connect(srv.mcpURL(), v)
			links := make(chan string, 1)
			c.setVisit(func(u string) { links <- u })
			for _, step := range []struct{ choice, want string }{{"accept", connected}, {"decline", declined}} {
				c.answer(mgAnswer("accept", nil))
				type result struct {
					out   string
					isErr bool
					err   error
				}
				done := make(chan result, 1)
				go func() {
					out, isErr, err := s.call(t.Context(), "connect_account", nil)
					done <- result{out, isErr, err}
				}()
				select {
				case link := <-links:
					choose(t, wd, link, step.choice)
				case r := <-done:
					t.Fatalf("%s: the call ended before the page was answered: %+v", step.choice, r)
				}
				if r := <-done; r.err != nil || r.isErr || r.out != step.want {
					t.Errorf("%s on the page: got %+v, want %q", step.choice, r, step.want)
				}
			}
		})
	}
}

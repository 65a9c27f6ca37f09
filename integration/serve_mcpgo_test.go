package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	evclient "github.com/elicitvault/elicitvault/elicit/client"
	mcpgoclient "github.com/elicitvault/elicitvault/mcpgo/client"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
)

// TestServeMCPGoClient drives serve's tools with the mark3labs/mcp-go
// client over Streamable HTTP on both protocol generations: accept,
// decline, cancel and invalid content in form mode, URL mode through the
// consent page with its completion notification, and -32042.
func TestServeMCPGoClient(t *testing.T) {
	srv := startServe(t, nil)
	for _, v := range mcpgoVersions {
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
			t.Run("url", func(t *testing.T) {
				visits := make(chan [2]int, 1)
				c.setVisit(func(u string) {
					p, cb := browse(t, u, "")
					visits <- [2]int{p, cb}
				})
				defer c.setVisit(nil)
				c.answer(mgAnswer("accept", nil))
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
				if v == "2025-11-25" {
					c.waitComplete(last.ElicitationID)
				}
				if p, _ := browse(t, last.URL, ""); p != http.StatusGone {
					t.Errorf("a used link: consent page %d, want 410", p)
				}
			})
			t.Run("url-required", func(t *testing.T) {
				args := map[string]any{"url_required_error": true}
				if v != "2025-11-25" {
					// On 2026-07-28 URL mode is an input request like any other.
					c.setVisit(func(u string) { browse(t, u, "") })
					defer c.setVisit(nil)
					c.answer(mgAnswer("accept", nil))
					if out, _ := call(t, "connect_account", args); out != "Your Example account is connected." {
						t.Fatalf("got %q", out)
					}
					return
				}
				_, _, err := s.call(ctx, "connect_account", args)
				els, ok := mgURLRequired(err)
				if !ok || len(els) != 1 || els[0].Mode != "url" {
					t.Fatalf("got %v, want the error -32042 with one URL elicitation", err)
				}
				if p, cb := browse(t, els[0].URL, ""); p != 200 || cb != 200 {
					t.Fatalf("consent page %d, callback %d", p, cb)
				}
				c.waitComplete(els[0].ElicitationID)
				if out, _ := call(t, "connect_account", args); out != "Your Example account is connected." {
					t.Fatalf("retry: got %q", out)
				}
				if _, _, err := s.call(ctx, "connect_account", args); err == nil {
					t.Error("third call succeeded, want -32042 again")
				} else if _, ok := mgURLRequired(err); !ok {
					t.Errorf("third call: got %v, want -32042 again", err)
				}
			})
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

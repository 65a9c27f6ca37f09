package integration

import (
	"context"
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

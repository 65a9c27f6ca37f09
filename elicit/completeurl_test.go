package elicit_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CompleteURL, for a server's own page, reports whether the call took the
// answer: at once for a call that waits (2025-11-25, and a 2026-07-28
// retry); not for a 2026-07-28 call between two rounds, whose client has
// not sent the link's round back yet: the answer is kept, and the retry
// uses it.
func TestCompleteURLTaken(t *testing.T) {
	for _, c := range []struct {
		version string
		// before: the page is completed before the client answers the
		// URL request (the person was quicker than the application).
		before bool
		taken  bool
	}{
		{"2025-11-25", false, true},
		{"2026-07-28", false, true},
		{"2026-07-28", true, false},
	} {
		name := c.version
		if c.before {
			name += " between rounds"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			elicit.SetTakenWait(e.ev, time.Second)
			e.tool("pay", func(ctx context.Context, _ *mcp.CallToolRequest) (string, error) {
				a, err := elicit.URL(ctx, "Pay for your order", elicit.WithLink(elicit.CallbackURL("https://shop.example/pay")))
				return string(a), err
			})
			type outcome struct {
				taken bool
				err   error
			}
			done := make(chan outcome, 1)
			complete := func(link string) {
				u, err := url.Parse(link)
				if err != nil {
					done <- outcome{err: err}
					return
				}
				taken, err := e.ev.CompleteURL(context.Background(), u.Query().Get("token"), "", elicit.Accept)
				done <- outcome{taken, err}
			}
			cs := e.connect(&mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if c.before {
						complete(req.Params.URL)
					} else {
						go complete(req.Params.URL)
					}
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			}, c.version)
			if text, isErr := call(t, cs, "pay"); isErr || text != "accept" {
				t.Fatalf("got %q (error %v), want accept", text, isErr)
			}
			got := <-done
			if got.err != nil || got.taken != c.taken {
				t.Fatalf("CompleteURL: taken %v, %v; want taken %v", got.taken, got.err, c.taken)
			}
		})
	}
}

package elicit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A URL-mode elicitation followed by another: on 2026-07-28 the handler
// runs three times, and the URL answer of the first round, once its
// callback came, is not waited for again in the third.
func TestURLThenForm(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		elicit.SetTakenWait(e.ev, 100*time.Millisecond) // an early answer waits for the client's reply
		srv := e.callback()
		e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			a, err := elicit.URL(ctx, "Connect your account", elicit.WithLink(elicit.CallbackURL(srv.URL+"/cb")))
			if err != nil {
				return "", err
			}
			n, err := elicit.Form[count](ctx, "How many repositories?")
			if err != nil {
				return "", err
			}
			return fmt.Sprint(a, " ", n.Action, " ", n.Content.N), nil
		})
		c := newURLClient(t, true)
		opts := c.options()
		urlHandler := opts.ElicitationHandler
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				return urlHandler(ctx, req)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": 3}}, nil
		}
		cs := e.connect(opts, version)
		if got, isErr := call(t, cs, "connect"); isErr || got != "accept accept 3" {
			t.Fatalf("got %q (error %v)", got, isErr)
		}
		e.assertEmpty()
	})
}

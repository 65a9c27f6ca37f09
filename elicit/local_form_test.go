package elicit_test

import (
	"context"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A blocking form, kept in the process, and an elicitation kept in the
// store replace each other in one session: a URL-mode elicitation handed
// to the model (the client has no URL mode) cancels a pending form, and a
// new form leaves the model's elicitation unanswerable.
func TestFormAndStoredElicitationReplaceEachOther(t *testing.T) {
	e := newEnv(t, llmConfig)
	srv := e.callback()
	e.tool("connect", urlTool(srv.URL))
	formErr := make(chan error, 2)
	e.tool("form", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Form[profile](ctx, "form", withProfile, elicit.WithTTL(10*time.Second))
		formErr <- err
		return "", err
	})
	asked := make(chan struct{}, 2)
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}, legacy)
	// The last form is cancelled at the end, not left to its TTL.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	callForm := func() {
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "form"})
		select {
		case <-asked:
		case <-time.After(5 * time.Second):
			t.Fatal("the form was not asked")
		}
	}

	callForm()
	id, _ := urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
	// An elicitation handed to the model replaces the pending form.
	fronttest.RecvErr(t, formErr, elicit.ErrReplaced, "the pending form's end")

	callForm()
	if res := submit(t, cs, id, "decline", nil); !res.IsError {
		t.Fatalf("the model answered an elicitation a newer form replaced: %q", text(res))
	}
}

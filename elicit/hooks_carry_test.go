package elicit_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type carryKey struct{}

// Carry's entries, taken from the request flow's context on the node that
// asks, reach Resume on the node whose consent page completes the
// elicitation, sealed in the pending record: never in the link, never in
// the clear in the store.
func TestHooksCarryAcrossNodes(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		const marker = "00-carried-trace-context-4bf92f3577b34da6"
		asker := elicit.Hooks{
			AroundRequest: func(ctx context.Context, r *elicit.Request, next elicit.RequestFunc) (*elicit.Response, error) {
				return next(context.WithValue(ctx, carryKey{}, marker), r)
			},
			Carry: func(ctx context.Context) map[string]string {
				v, _ := ctx.Value(carryKey{}).(string)
				return map[string]string{"traceparent": v}
			},
		}
		e := newEnv(t, &elicit.Config{Hooks: []elicit.Hooks{asker}})

		var (
			mu      sync.Mutex
			resumed []map[string]string
			mode    elicit.Mode
			ended   []error
		)
		resumer := elicit.Hooks{
			Resume: func(ctx context.Context, m elicit.Mode, carried map[string]string) (context.Context, func(error)) {
				mu.Lock()
				resumed, mode = append(resumed, carried), m
				mu.Unlock()
				return context.WithValue(ctx, carryKey{}, carried["traceparent"]), func(err error) {
					mu.Lock()
					ended = append(ended, err)
					mu.Unlock()
				}
			},
		}
		e.otherNode(newKeyring(t), &elicit.Config{Hooks: []elicit.Hooks{resumer}})

		status := make(chan int, 1)
		cs := e.connect(&mcp.ClientOptions{
			Capabilities: bothModes,
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if strings.Contains(req.Params.URL, "carried") {
					t.Errorf("the link carries the hook's entries: %s", req.Params.URL)
				}
				entries, _, err := e.store.Scan(ctx, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				for _, en := range entries {
					if bytes.Contains(en.Value, []byte("carried")) || strings.Contains(en.Key, "carried") {
						t.Errorf("the store holds the carried entries in the clear")
					}
				}
				go func() {
					time.Sleep(20 * time.Millisecond)
					status <- get(t, req.Params.URL)
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}, version)
		if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
			t.Fatalf("got %q", got)
		}
		if s := <-status; s != http.StatusOK {
			t.Fatalf("callback status %d", s)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(resumed) != 1 || resumed[0]["traceparent"] != marker || mode != elicit.ModeURL {
			t.Errorf("the other node resumed %v (mode %q), want one resumption with the carried entry", resumed, mode)
		}
		if len(ended) != 1 || ended[0] != nil {
			t.Errorf("Resume's end got %v, want one nil", ended)
		}
	})
}

// A Carry over MaxCarried carries nothing, and the elicitation still runs.
func TestHooksCarryTooLarge(t *testing.T) {
	big := strings.Repeat("x", elicit.MaxCarried)
	e := newEnv(t, &elicit.Config{Hooks: []elicit.Hooks{{
		Carry: func(context.Context) map[string]string { return map[string]string{"k": big} },
	}}})
	var got []map[string]string
	e.otherNode(newKeyring(t), &elicit.Config{Hooks: []elicit.Hooks{{
		Resume: func(ctx context.Context, _ elicit.Mode, carried map[string]string) (context.Context, func(error)) {
			got = append(got, carried)
			return ctx, nil
		},
	}}})
	e.acceptURL("2025-11-25")
	if len(got) != 1 || len(got[0]) != 0 {
		t.Errorf("Resume got %v, want nothing carried", got)
	}
}

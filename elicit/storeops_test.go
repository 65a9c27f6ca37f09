package elicit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countOps counts the store operations of events (an opLog's), by name.
func countOps(events []string) (ops map[string]int, total int) {
	ops = map[string]int{}
	for _, ev := range events {
		ops[ev]++
		total++
	}
	return ops, total
}

func formatOps(ops map[string]int) string {
	var parts []string
	for k, v := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// TestStoreOpsPerElicitation counts the store operations of one confirmed
// elicitation on each protocol generation, the figure the performance
// work cuts (each is a round trip to Redis or PostgreSQL). It prints them
// and holds them to the counts of today, so that a change that adds one
// shows here.
func TestStoreOpsPerElicitation(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		max           float64
	}{
		// subscribe, swap (session), delete (result), compare-and-swap
		// (session): a blocking form writes no pending record, since only
		// the client's reply answers it
		{"2025-11-25", legacy, 4},
		// put-if-absent-and-get (the requestState's one-shot claim, and
		// the store's epoch read with it, after it: a marker found missing
		// is trusted only while the store holds the requestState's epoch;
		// SECURITY.md says why a cached epoch would not do),
		// compare-and-swap (its commit)
		{"2026-07-28", mrtr, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &opLog{Store: memory.New(nil)}
			defer c.Close()
			e := newEnvOn(t, c, nil, newKeyring(t))
			e.tool("confirm", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				ok, err := elicit.Confirm(ctx, "Delete 3 contacts?")
				return fmt.Sprint(ok), err
			})
			cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("accept", map[string]any{"confirm": true})}, tc.version)
			call(t, cs, "confirm") // warm
			before := len(c.events())
			const n = 10
			for range n {
				if got, isErr := call(t, cs, "confirm"); isErr || got != "true" {
					t.Fatalf("got %q (error %v)", got, isErr)
				}
			}
			ops, total := countOps(c.events()[before:])
			per := float64(total) / n
			t.Logf("%s: %.1f store operations per elicitation (%s, over %d)", tc.name, per, formatOps(ops), n)
			if per > tc.max {
				t.Errorf("%.1f store operations per elicitation, more than %g", per, tc.max)
			}
		})
	}
}

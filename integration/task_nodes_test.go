package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTaskAcrossNodes: on Redis and PostgreSQL, each node with a store
// client of its own, a task started on one node is polled and answered on
// the other, whose answer reaches the handler waiting on the first
// through the store and its notifications.
func TestTaskAcrossNodes(t *testing.T) {
	for _, b := range sharedBackends("evtasks") {
		t.Run(b.name, func(t *testing.T) {
			open := b.namespace(t)
			keys, err := keyring.New([]byte(secretA))
			if err != nil {
				t.Fatal(err)
			}
			var urls [2]string
			for i := range urls {
				ev, err := elicit.New(keys, open(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ev.Close() })
				s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
				ev.Install(s)
				mcp.AddTool(s, &mcp.Tool{Name: "profile"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
					res, err := elicit.Form[zkForm](ctx, "Your favourite colour?")
					if err != nil {
						return nil, nil, err
					}
					return text(fmt.Sprintf("%s %s on node %d", res.Action, res.Content.Colour, i)), nil, nil
				})
				if err := ev.RunAsTask(s, "profile", elicit.TaskRequired); err != nil {
					t.Fatal(err)
				}
				urls[i] = zkTaskServer(t, ev, s)
			}
			created := zkRPC(t, urls[0], "tools/call", map[string]any{"name": "profile", "arguments": map[string]any{}})
			id, _ := created["taskId"].(string)
			if id == "" {
				t.Fatalf("tools/call: %v, want a task", created)
			}
			var key string
			for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(20 * time.Millisecond) {
				inputs, _ := zkRPC(t, urls[1], "tasks/get", map[string]any{"taskId": id})["inputRequests"].(map[string]any)
				for k := range inputs {
					key = k
				}
				if time.Now().After(deadline) {
					t.Fatal("the task did not ask")
				}
			}
			zkRPC(t, urls[1], "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": map[string]any{zkField: "teal"}},
			}})
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				got := zkRPC(t, urls[1], "tasks/get", map[string]any{"taskId": id})
				if got["status"] == "completed" {
					if r := fmt.Sprint(got["result"]); !strings.Contains(r, "accept teal on node 0") {
						t.Fatalf("result %s, want the answer, on node 0", r)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the task did not complete: %v", got)
				}
			}
		})
	}
}

package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/mcpgo"
	mg "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
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
				ev := newElicitor(t, keys, open(), nil)
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

// TestTaskAcrossSDKs: on Redis and PostgreSQL, a go-sdk node and an
// mcp-go node (the mcpgo front-end) with one secret are one deployment
// for tasks too: a task started on either is polled and answered through
// tasks/update on the other, and the answer reaches the handler waiting
// on the first; one cancelled on the other reads cancelled on its own.
func TestTaskAcrossSDKs(t *testing.T) {
	for _, b := range sharedBackends("evtasksdk") {
		t.Run(b.name, func(t *testing.T) {
			open := b.namespace(t)
			keys, err := keyring.New([]byte(secretA))
			if err != nil {
				t.Fatal(err)
			}
			node := func() *elicit.Elicitor {
				ev := newElicitor(t, keys, open(), nil)
				return ev
			}
			ask := func(ctx context.Context, sdk string) (string, error) {
				res, err := elicit.Form[zkForm](ctx, "Your favourite colour?")
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s %s on %s", res.Action, res.Content.Colour, sdk), nil
			}

			ev := node()
			s := mcp.NewServer(&mcp.Implementation{Name: "gosdk", Version: "1"}, nil)
			ev.Install(s)
			mcp.AddTool(s, &mcp.Tool{Name: "profile"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				out, err := ask(ctx, "go-sdk")
				if err != nil {
					return nil, nil, err
				}
				return text(out), nil, nil
			})
			if err := ev.RunAsTask(s, "profile", elicit.TaskRequired); err != nil {
				t.Fatal(err)
			}
			gosdk := zkTaskServer(t, ev, s)
			mcpgoURL := mcpgoTaskNode(t, node(), func(ctx context.Context) (string, error) { return ask(ctx, "mcp-go") })

			for _, tc := range []struct{ name, start, answer, want string }{
				{"started on go-sdk, answered on mcp-go", gosdk, mcpgoURL, "accept teal on go-sdk"},
				{"started on mcp-go, answered on go-sdk", mcpgoURL, gosdk, "accept teal on mcp-go"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					created := zkRPC(t, tc.start, "tools/call", map[string]any{"name": "profile", "arguments": map[string]any{}})
					id, _ := created["taskId"].(string)
					if id == "" || created["resultType"] != "task" {
						t.Fatalf("tools/call: %v, want a task", created)
					}
					var key string
					for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(20 * time.Millisecond) {
						inputs, _ := zkRPC(t, tc.answer, "tasks/get", map[string]any{"taskId": id})["inputRequests"].(map[string]any)
						for k := range inputs {
							key = k
						}
						if time.Now().After(deadline) {
							t.Fatal("the task did not ask")
						}
					}
					zkRPC(t, tc.answer, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
						key: map[string]any{"action": "accept", "content": map[string]any{zkField: "teal"}},
					}})
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						got := zkRPC(t, tc.answer, "tasks/get", map[string]any{"taskId": id})
						if got["status"] == "completed" {
							if r := fmt.Sprint(got["result"]); !strings.Contains(r, tc.want) {
								t.Fatalf("result %s, want %q", r, tc.want)
							}
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("the task did not complete: %v", got)
						}
					}

					// Cancelled on the other node, a task reads cancelled on its own.
					created = zkRPC(t, tc.start, "tools/call", map[string]any{"name": "profile", "arguments": map[string]any{}})
					id, _ = created["taskId"].(string)
					zkRPC(t, tc.answer, "tasks/cancel", map[string]any{"taskId": id})
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						if got := zkRPC(t, tc.start, "tasks/get", map[string]any{"taskId": id}); got["status"] == "cancelled" {
							break
						}
						if time.Now().After(deadline) {
							t.Fatal("the task was not cancelled")
						}
					}
				})
			}
		})
	}
}

type zkUserKey struct{}

// mcpgoTaskNode serves, through the mcpgo front-end of ev, an mcp-go
// server whose tool "profile" runs ask as a task (TaskRequired); every
// request is authenticated as zkSubjectTask, as zkTaskServer's are.
func mcpgoTaskNode(t *testing.T, ev *elicit.Elicitor, ask func(context.Context) (string, error)) string {
	t.Helper()
	m := mgserver.NewMCPServer("mcpgo", "1", mgserver.WithToolCapabilities(false))
	front := mcpgo.New(ev, m, &mcpgo.Options{Subject: func(ctx context.Context) string {
		user, _ := ctx.Value(zkUserKey{}).(string)
		return user
	}})
	m.AddTool(mg.NewTool("profile"), func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
		out, err := ask(ctx)
		if err != nil {
			return nil, err
		}
		return mg.NewToolResultText(out), nil
	})
	if err := front.RunAsTask("profile", elicit.TaskRequired); err != nil {
		t.Fatal(err)
	}
	h := front.Handler(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer user-zk" { // fronttest.Call as the user zk
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), zkUserKey{}, zkSubjectTask)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath
}

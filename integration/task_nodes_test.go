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
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo"
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
			keys := keysA(t)
			var urls [2]string
			for i := range urls {
				urls[i] = gosdkTaskNode(t, newElicitor(t, keys, open(), nil), askColour("Your favourite colour?", fmt.Sprintf(" on node %d", i)))
			}
			if r := zkTaskRound(t, urls[0], urls[1], "profile", "teal", nil); !strings.Contains(r, "accept teal on node 0") {
				t.Fatalf("result %s, want the answer, on node 0", r)
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
			keys := keysA(t)
			gosdk := gosdkTaskNode(t, newElicitor(t, keys, open(), nil), askColour("Your favourite colour?", " on go-sdk"))
			mcpgoURL := mcpgoTaskNode(t, newElicitor(t, keys, open(), nil), askColour("Your favourite colour?", " on mcp-go"))

			for _, tc := range []struct{ name, start, answer, want string }{
				{"started on go-sdk, answered on mcp-go", gosdk, mcpgoURL, "accept teal on go-sdk"},
				{"started on mcp-go, answered on go-sdk", mcpgoURL, gosdk, "accept teal on mcp-go"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if r := zkTaskRound(t, tc.start, tc.answer, "profile", "teal", nil); !strings.Contains(r, tc.want) {
						t.Fatalf("result %s, want %q", r, tc.want)
					}

					// Cancelled on the other node, a task reads cancelled on its own.
					id := zkTaskStart(t, tc.start, "profile")
					zkRPC(t, tc.answer, "tasks/cancel", map[string]any{"taskId": id})
					fronttest.Await(t, tc.start, "zk", id, "cancelled", zkTaskCaps)
				})
			}
		})
	}
}

// zkTaskCaps are the capabilities of the client of zkRPC: elicitation
// and the tasks extension.
var zkTaskCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// askColour asks for zkForm with message, and says the action, the
// colour and suffix.
func askColour(message, suffix string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		res, err := elicit.Form[zkForm](ctx, message)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s%s", res.Action, res.Content.Colour, suffix), nil
	}
}

// addTask adds to s, a server ev is installed on, the tool name that runs
// ask as a task (TaskRequired).
func addTask(t *testing.T, ev *elicit.Elicitor, s *mcp.Server, name string, ask func(context.Context) (string, error)) {
	t.Helper()
	addTextTool(s, name, ask)
	if err := ev.RunAsTask(s, name, elicit.TaskRequired); err != nil {
		t.Fatal(err)
	}
}

// gosdkTaskNode serves, through elicit's Handler (zkTaskServer), a go-sdk
// server of ev whose tool "profile" runs ask as a task, as mcpgoTaskNode
// does on mcp-go.
func gosdkTaskNode(t *testing.T, ev *elicit.Elicitor, ask func(context.Context) (string, error)) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk", Version: "1"}, nil)
	ev.Install(s)
	addTask(t, ev, s, "profile", ask)
	return zkTaskServer(t, ev, s)
}

// zkTaskStart calls tool at url; the result must be a task, whose ID it
// returns.
func zkTaskStart(t *testing.T, url, tool string) string {
	t.Helper()
	created := zkRPC(t, url, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
	id, _ := created["taskId"].(string)
	if id == "" || created["resultType"] != "task" {
		t.Fatalf("tools/call %s: %v, want a task", tool, created)
	}
	return id
}

// zkTaskRound starts a task of tool at start, polls it at answer until it
// asks, calls pending (when not nil) with its ID, answers colour through
// tasks/update at answer, and returns the completed task's result there,
// printed.
func zkTaskRound(t *testing.T, start, answer, tool, colour string, pending func(id string)) string {
	t.Helper()
	id := zkTaskStart(t, start, tool)
	var key string
	for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(20 * time.Millisecond) {
		got := zkRPC(t, answer, "tasks/get", map[string]any{"taskId": id})
		inputs, _ := got["inputRequests"].(map[string]any)
		for k := range inputs {
			key = k
		}
		if key == "" && time.Now().After(deadline) {
			t.Fatalf("the task did not ask: %v", got)
		}
	}
	if pending != nil {
		pending(id)
	}
	zkRPC(t, answer, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{zkField: colour}},
	}})
	return fmt.Sprint(fronttest.Await(t, answer, "zk", id, "completed", zkTaskCaps)["result"])
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
	addMGTextTool(m, "profile", ask)
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

package mcpgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/elicitlink"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// taskNode is an mcp-go node over st whose tool "confirm" runs as a task
// and asks for a confirmation, and whose tool "greet_later" asks for a
// name (2026-07-28 input requests), then continues as a task
// (StartTask). It is served by Handler; a bearer token "user-X"
// authenticates X.
func taskNode(t *testing.T, st store.Store) string {
	t.Helper()
	f, m := confirmNode(t, st, elicit.TaskOptional)
	m.AddTool(mcp.NewTool("greet_later"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := elicit.Form[struct {
			Name string `json:"name"`
		}](ctx, "Your name?", elicitlink.InputKey("user_name").(elicit.Option))
		if err != nil {
			return nil, err
		}
		return StartTask(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Hello, " + res.Content.Name), nil
		})
	})
	h := f.Handler(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer user-")
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, user)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath
}

// confirmNode is a front-end over st, on an mcp-go server whose tool
// "confirm" asks for a confirmation and runs as a task with support; a
// request's subject is its context's subjectKey.
func confirmNode(t *testing.T, st store.Store, support elicit.TaskSupport) (*Server, *server.MCPServer) {
	t.Helper()
	ev := fronttest.NewElicitor(t, st, nil)
	m := server.NewMCPServer("test", "1", server.WithToolCapabilities(false))
	f := New(ev, m, &Options{Subject: func(ctx context.Context) string {
		s, _ := ctx.Value(subjectKey{}).(string)
		return s
	}})
	m.AddTool(mcp.NewTool("confirm"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok, err := elicit.Confirm(ctx, "Proceed?")
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(fmt.Sprint("confirmed: ", ok)), nil
	})
	if err := f.RunAsTask("confirm", support); err != nil {
		t.Fatal(err)
	}
	return f, m
}

type rpcError = fronttest.Error

var tasksCaps = map[string]any{
	"elicitation": map[string]any{"form": map[string]any{}},
	"extensions":  map[string]any{engine.TasksExtension: map[string]any{}},
}

// taskRPC sends one request on 2026-07-28 as user with the client
// capabilities caps, and returns its result or its error.
var taskRPC = fronttest.Call

// awaitTask polls tasks/get until the task has status want.
func awaitTask(t *testing.T, url, user, id, want string) map[string]any {
	t.Helper()
	return fronttest.Await(t, url, user, id, want, tasksCaps)
}

// TestTask: on the mcp-go front-end, a tool of RunAsTask called by a
// client that declared the extension answers with a task; tools/list and
// server/discover say so; the task's input request is answered through
// tasks/update on another node; a tasks/update that does not match the
// schema, is replayed, names a tampered task ID or comes from another
// user is refused with -32602 and writes nothing.
func TestTask(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a, b := taskNode(t, st), taskNode(t, st)

	list, rerr := taskRPC(t, a, "alice", "tools/list", map[string]any{}, tasksCaps)
	if rerr != nil {
		t.Fatalf("tools/list: %+v", rerr)
	}
	execution := map[string]string{}
	for _, tool := range list["tools"].([]any) {
		tool := tool.(map[string]any)
		execution[tool["name"].(string)] = fmt.Sprint(tool["execution"])
	}
	if execution["confirm"] != "map[taskSupport:optional]" || execution["greet_later"] != "<nil>" {
		t.Fatalf("tools/list: execution %v, want confirm's taskSupport optional, and none for greet_later", execution)
	}
	disc, rerr := taskRPC(t, a, "alice", "server/discover", map[string]any{}, tasksCaps)
	if rerr != nil || !strings.Contains(fmt.Sprint(disc["capabilities"]), engine.TasksExtension) {
		t.Fatalf("server/discover: %v, %+v; want the extension", disc, rerr)
	}

	created, rerr := taskRPC(t, a, "alice", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}}, tasksCaps)
	if rerr != nil || created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("tools/call: %v, %+v; want a task", created, rerr)
	}
	id := created["taskId"].(string)
	got := awaitTask(t, b, "alice", id, "input_required")
	var key string
	for key = range got["inputRequests"].(map[string]any) {
	}

	refused := func(name, url, user, taskID string, answer any) {
		t.Helper()
		before := fronttest.Dump(t, st)
		_, rerr := taskRPC(t, url, user, "tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{key: answer}}, tasksCaps)
		if rerr == nil || rerr.Code != -32602 {
			t.Fatalf("%s: %+v, want -32602", name, rerr)
		}
		if !maps.Equal(before, fronttest.Dump(t, st)) {
			t.Fatalf("%s: the store changed", name)
		}
	}
	yes := map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
	tampered := []byte(id)
	tampered[len(tampered)/2] ^= 1
	refused("an answer that does not match the schema", b, "alice", id, map[string]any{"action": "accept", "content": map[string]any{"confirm": "yes please"}})
	refused("a tampered task ID", b, "alice", string(tampered), yes)
	refused("another user", b, "mallory", id, yes)
	if _, rerr := taskRPC(t, b, "mallory", "tasks/get", map[string]any{"taskId": id}, tasksCaps); rerr == nil || rerr.Code != -32602 {
		t.Fatalf("another user's tasks/get: %+v, want -32602", rerr)
	}

	ack, rerr := taskRPC(t, b, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: yes}}, tasksCaps)
	if rerr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v, %+v", ack, rerr)
	}
	done := awaitTask(t, b, "alice", id, "completed")
	if got := fmt.Sprint(done["result"]); !strings.Contains(got, "confirmed: true") {
		t.Fatalf("result %s, want confirmed: true", got)
	}
	refused("a replay", b, "alice", id, yes)
	refused("a replay on the first node", a, "alice", id, yes)
}

// TestTaskWithoutExtension: a client that did not declare the extension
// gets the tool's plain result (TaskOptional), and tasks/* refuses it
// with -32021.
func TestTaskWithoutExtension(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a := taskNode(t, st)
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	first, rerr := taskRPC(t, a, "alice", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}}, caps)
	if rerr != nil || first["resultType"] != "input_required" {
		t.Fatalf("tools/call: %v, %+v; want input requests, not a task", first, rerr)
	}
	if _, rerr := taskRPC(t, a, "alice", "tasks/get", map[string]any{"taskId": "x"}, caps); rerr == nil || rerr.Code != -32021 {
		t.Fatalf("tasks/get without the extension: %+v, want -32021", rerr)
	}
	// The method spelled with an escape is the same method.
	escaped := func(b []byte) []byte { return bytes.Replace(b, []byte(`"tasks/get"`), []byte(`"tasks\/get"`), 1) }
	if _, rerr := taskRPC(t, a, "alice", "tasks/get", map[string]any{"taskId": "x"}, caps, escaped); rerr == nil || rerr.Code != -32021 {
		t.Fatalf("tasks\\/get without the extension: %+v, want -32021", rerr)
	}
}

// TestStartTaskMCPGo: an mcp-go handler that asks with input requests and
// then calls StartTask answers its last round with a task, whose result
// has the answer; a client without the extension gets the result in that
// round.
func TestStartTaskMCPGo(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	u := taskNode(t, st)
	fronttest.CheckStartTask(t, u, tasksCaps)
}

// TestTaskStdio: over stdio, a task's call, its tasks/get and its
// tasks/update are served on the connection.
func TestTaskStdio(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	f, _ := confirmNode(t, st, elicit.TaskRequired)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- f.ServeStdio(ctx, inR, outW) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-served
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	id := 0
	send := func(method string, params map[string]any, caps map[string]any) (map[string]any, *rpcError) {
		t.Helper()
		id++
		p := maps.Clone(params)
		p["_meta"] = fronttest.Meta(caps)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			var msg struct {
				ID     int            `json:"id"`
				Result map[string]any `json:"result"`
				Error  *rpcError      `json:"error"`
			}
			if json.Unmarshal(lines.Bytes(), &msg) == nil && msg.ID == id {
				return msg.Result, msg.Error
			}
		}
		t.Fatal("the connection ended")
		return nil, nil
	}
	if _, rerr := send("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}}, map[string]any{"elicitation": map[string]any{}}); rerr == nil || rerr.Code != -32021 {
		t.Fatalf("a required task without the extension: %+v, want -32021", rerr)
	}
	created, rerr := send("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}}, tasksCaps)
	if rerr != nil || created["resultType"] != "task" {
		t.Fatalf("tools/call: %v, %+v; want a task", created, rerr)
	}
	task := created["taskId"].(string)
	var key string
	for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(20 * time.Millisecond) {
		got, rerr := send("tasks/get", map[string]any{"taskId": task}, tasksCaps)
		if rerr != nil {
			t.Fatalf("tasks/get: %+v", rerr)
		}
		inputs, _ := got["inputRequests"].(map[string]any)
		for key = range inputs {
		}
		if time.Now().After(deadline) {
			t.Fatal("the task did not ask")
		}
	}
	if _, rerr := send("tasks/update", map[string]any{"taskId": task, "inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}, tasksCaps); rerr != nil {
		t.Fatalf("tasks/update: %+v", rerr)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _ := send("tasks/get", map[string]any{"taskId": task}, tasksCaps)
		if got["status"] == "completed" {
			if r := fmt.Sprint(got["result"]); !strings.Contains(r, "confirmed: false") {
				t.Fatalf("result %s, want confirmed: false", r)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not complete: %v", got)
		}
	}
}

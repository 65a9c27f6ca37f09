package elicit_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskNode is one node of a deployment whose tool "confirm" runs as a
// task, served over Streamable HTTP by Handler; a bearer token "user-X"
// authenticates X.
func taskNode(t *testing.T, keys *ring.Keyring, st store.Store, cfg ...*elicit.Config) string {
	t.Helper()
	ev, err := elicit.New((*keyring.Keyring)(keys), st, append(cfg, nil)[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Proceed?")
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("confirmed: ", ok)}}}, nil, nil
	})
	if err := ev.RunAsTask(s, "confirm", elicit.TaskOptional); err != nil {
		t.Fatal(err)
	}
	return serveUsers(t, ev, s)
}

// serveUsers serves s with ev's Handler over Streamable HTTP, where a
// bearer token "user-X" authenticates X, and returns its MCP endpoint.
func serveUsers(t *testing.T, ev *elicit.Elicitor, s *mcp.Server) string {
	t.Helper()
	srv := httptest.NewServer(ev.Handler(s, &elicit.HandlerOptions{MCP: auth.RequireBearerToken(verifyUser, nil)}))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath
}

type rpcError = fronttest.Error

// taskCaps declares form and URL elicitation and the tasks extension.
var taskCaps = map[string]any{
	"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
	"extensions":  map[string]any{elicit.TasksExtension: map[string]any{}},
}

// rpc sends one request on 2026-07-28 as user, with the tasks extension
// declared, and returns its result or its error.
func rpc(t *testing.T, url, user, method string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	return fronttest.Call(t, url, user, method, params, taskCaps)
}

// awaitStatus polls tasks/get until the task has status want.
func awaitStatus(t *testing.T, url, user, id, want string) map[string]any {
	t.Helper()
	return fronttest.Await(t, url, user, id, want, taskCaps)
}

// startTask calls confirm on url as alice and waits for its input request.
func startTask(t *testing.T, url string, poll string) (id, key string) {
	t.Helper()
	res, rerr := rpc(t, url, "alice", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}})
	if rerr != nil || res["resultType"] != "task" {
		t.Fatalf("tools/call: %v, %+v; want a task", res, rerr)
	}
	id = res["taskId"].(string)
	got := awaitStatus(t, poll, "alice", id, "input_required")
	inputs, _ := got["inputRequests"].(map[string]any)
	if len(inputs) != 1 {
		t.Fatalf("inputRequests %v, want one", got["inputRequests"])
	}
	for key = range inputs {
	}
	return id, key
}

// TestTaskAnsweredOnAnotherNode starts a task on one node; the client
// polls it and answers its input request on another, which validates the
// answer against the schema asked and writes it, sealed, to the store the
// first node waits on.
func TestTaskAnsweredOnAnotherNode(t *testing.T) {
	keys := newKeyring(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a, b := taskNode(t, keys, st), taskNode(t, keys, st)

	// tools/list says that confirm runs as a task.
	list, rerr := rpc(t, a, "alice", "tools/list", map[string]any{})
	if rerr != nil || list["resultType"] != "complete" {
		t.Fatalf("tools/list: %v, %+v", list, rerr)
	}
	tools, _ := list["tools"].([]any)
	if len(tools) != 1 || fmt.Sprint(tools[0].(map[string]any)["execution"]) != "map[taskSupport:optional]" {
		t.Fatalf("tools/list: %v, want confirm with execution.taskSupport optional", list["tools"])
	}

	id, key := startTask(t, a, b)
	// An answer that does not match the schema is refused, and nothing is
	// written.
	before := fronttest.Dump(t, st)
	_, rerr = rpc(t, b, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": "yes please"}},
	}})
	if rerr == nil || rerr.Code != -32602 {
		t.Fatalf("invalid answer: %+v, want -32602", rerr)
	}
	if !maps.Equal(before, fronttest.Dump(t, st)) {
		t.Fatal("a refused answer changed the store")
	}
	ack, rerr := rpc(t, b, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
	}})
	if rerr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v, %+v", ack, rerr)
	}
	done := awaitStatus(t, b, "alice", id, "completed")
	res, _ := done["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "confirmed: true" {
		t.Fatalf("result %v, want confirmed: true", done["result"])
	}
}

// TestTaskUpdateRefused: a replayed tasks/update, one for a tampered task
// ID, and one from another user are refused with -32602, and the store is
// left as it was.
func TestTaskUpdateRefused(t *testing.T) {
	keys := newKeyring(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a, b := taskNode(t, keys, st), taskNode(t, keys, st)
	id, key := startTask(t, a, a)
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}

	refused := func(name, url, user, taskID string) {
		t.Helper()
		before := fronttest.Dump(t, st)
		_, rerr := rpc(t, url, user, "tasks/update", map[string]any{"taskId": taskID, "inputResponses": answer})
		if rerr == nil || rerr.Code != -32602 {
			t.Fatalf("%s: %+v, want -32602", name, rerr)
		}
		if !maps.Equal(before, fronttest.Dump(t, st)) {
			t.Fatalf("%s: the store changed", name)
		}
	}
	tampered := []byte(id)
	tampered[len(tampered)/2] ^= 1
	refused("tampered task ID", b, "alice", string(tampered))
	refused("another user", b, "mallory", id)
	if _, rerr := rpc(t, b, "mallory", "tasks/get", map[string]any{"taskId": id}); rerr == nil || rerr.Code != -32602 {
		t.Fatalf("another user's tasks/get: %+v, want -32602", rerr)
	}

	if _, rerr := rpc(t, b, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": answer}); rerr != nil {
		t.Fatalf("tasks/update: %+v", rerr)
	}
	awaitStatus(t, a, "alice", id, "completed")
	refused("replay", b, "alice", id)
	refused("replay on the first node", a, "alice", id)
}

// TestTaskURLMode: a URL-mode elicitation inside a task is an input
// request whose link the user follows; the page's answer, which may reach
// any node, resumes the task. Declined in tasks/update, it ends at once.
func TestTaskURLMode(t *testing.T) {
	ev := fronttest.NewElicitor(t, nil, nil)
	pages := httptest.NewServer(ev.Pages(func(*http.Request) (string, bool) { return "alice", true }))
	t.Cleanup(pages.Close)
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := elicit.URL(ctx, "Connect your account", elicit.WithLink(elicit.CallbackURL(pages.URL+"/cb")))
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(a)}}}, nil, nil
	})
	if err := ev.RunAsTask(s, "connect", elicit.TaskOptional); err != nil {
		t.Fatal(err)
	}
	mcpURL := serveUsers(t, ev, s)

	ask := func() (id, key, link string) {
		res, rerr := rpc(t, mcpURL, "alice", "tools/call", map[string]any{"name": "connect", "arguments": map[string]any{}})
		if rerr != nil || res["resultType"] != "task" {
			t.Fatalf("tools/call: %v, %+v", res, rerr)
		}
		id = res["taskId"].(string)
		got := awaitStatus(t, mcpURL, "alice", id, "input_required")
		for k, v := range got["inputRequests"].(map[string]any) {
			params := v.(map[string]any)["params"].(map[string]any)
			if params["mode"] != "url" {
				t.Fatalf("input request %v, want URL mode", v)
			}
			key, link = k, params["url"].(string)
		}
		return id, key, link
	}
	text := func(task map[string]any) string {
		c := task["result"].(map[string]any)["content"].([]any)
		return c[0].(map[string]any)["text"].(string)
	}

	id, key, link := ask()
	if _, rerr := rpc(t, mcpURL, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept"}}}); rerr != nil {
		t.Fatalf("tasks/update: %+v", rerr)
	}
	// Accepted in tasks/update, the task waits for the page.
	time.Sleep(100 * time.Millisecond)
	if got, _ := rpc(t, mcpURL, "alice", "tasks/get", map[string]any{"taskId": id}); got["status"] == "completed" {
		t.Fatal("the task completed before the page was answered")
	}
	resp, err := http.PostForm(link, url.Values{"action": {"accept"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page: HTTP %d", resp.StatusCode)
	}
	if got := text(awaitStatus(t, mcpURL, "alice", id, "completed")); got != "accept" {
		t.Fatalf("result %q, want accept", got)
	}

	id, key, _ = ask()
	if _, rerr := rpc(t, mcpURL, "alice", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}); rerr != nil {
		t.Fatalf("tasks/update: %+v", rerr)
	}
	if got := text(awaitStatus(t, mcpURL, "alice", id, "completed")); got != "decline" {
		t.Fatalf("result %q, want decline", got)
	}
}

// TestTaskBounds: a client cannot run more tasks at once than its bound
// (Config.MaxPendingPerSubject); the call beyond it is refused, and once a
// task ends there is room again.
func TestTaskBounds(t *testing.T) {
	keys := newKeyring(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a := taskNode(t, keys, st, &elicit.Config{MaxPendingPerSubject: 2})
	call := func(user string) (string, *rpcError) {
		res, rerr := rpc(t, a, user, "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}})
		id, _ := res["taskId"].(string)
		return id, rerr
	}
	first, _ := call("alice")
	if _, rerr := call("alice"); rerr != nil {
		t.Fatalf("second task: %+v", rerr)
	}
	before := len(fronttest.Dump(t, st))
	if _, rerr := call("alice"); rerr == nil {
		t.Fatal("a third task of alice was started")
	}
	if n := len(fronttest.Dump(t, st)); n != before {
		t.Fatalf("the refused task wrote %d entries", n-before)
	}
	if _, rerr := call("bob"); rerr != nil {
		t.Fatalf("bob's task: %+v", rerr)
	}
	if _, rerr := rpc(t, a, "alice", "tasks/cancel", map[string]any{"taskId": first}); rerr != nil {
		t.Fatal(rerr)
	}
	awaitStatus(t, a, "alice", first, "cancelled")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, rerr := call("alice"); rerr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room for a task of alice after one ended")
		}
	}
}

// TestTaskCancelledOnAnotherNode: tasks/cancel on another node than the
// one running the task ends its handler, and the task reads cancelled on
// both.
func TestTaskCancelledOnAnotherNode(t *testing.T) {
	keys := newKeyring(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a, b := taskNode(t, keys, st), taskNode(t, keys, st)
	id, _ := startTask(t, a, a)
	ack, rerr := rpc(t, b, "alice", "tasks/cancel", map[string]any{"taskId": id})
	if rerr != nil || ack["resultType"] != "complete" || len(ack) > 2 {
		t.Fatalf("tasks/cancel: %v, %+v", ack, rerr)
	}
	awaitStatus(t, b, "alice", id, "cancelled")
	got := awaitStatus(t, a, "alice", id, "cancelled")
	if _, ok := got["inputRequests"]; ok {
		t.Fatalf("a cancelled task lists input requests: %v", got)
	}
	// Cancelling again, or a task that ended, is the same empty ack.
	if _, rerr := rpc(t, a, "alice", "tasks/cancel", map[string]any{"taskId": id}); rerr != nil {
		t.Fatalf("tasks/cancel again: %+v", rerr)
	}
}

// TestTaskRoutingHeader: on tasks/*, an Mcp-Name header that is not the
// task ID is refused with HTTP 400 and -32020 before anything runs; one
// that is, or none (the go-sdk's client sends none), passes.
func TestTaskRoutingHeader(t *testing.T) {
	keys := newKeyring(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	a := taskNode(t, keys, st)
	id, _ := startTask(t, a, a)
	method := `"tasks/get"` // as written in the body
	get := func(name []string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%s,"params":{"taskId":%q,"_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},`+
			`"io.modelcontextprotocol/clientCapabilities":{"extensions":{%q:{}}}}}}`, method, id, elicit.TasksExtension)
		req, _ := http.NewRequest(http.MethodPost, a, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tasks/get")
		req.Header.Set("Authorization", "Bearer user-alice")
		for _, n := range name {
			req.Header.Add("Mcp-Name", n)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	for _, m := range []string{`"tasks/get"`, `"tasks\/get"`} { // an escape spells the same method
		method = m
		for _, name := range [][]string{{"other"}, {id, id}, {id + "x"}} {
			if code, body := get(name); code != http.StatusBadRequest || !strings.Contains(body, "-32020") {
				t.Errorf("method %s, Mcp-Name %q: HTTP %d %s, want 400 and -32020", m, name, code, body)
			}
		}
	}
	method = `"tasks/get"`
	for _, name := range [][]string{nil, {id}, {" " + id + " "}} {
		if code, body := get(name); code != http.StatusOK || !strings.Contains(body, `"status"`) {
			t.Errorf("Mcp-Name %q: HTTP %d %s, want the task", name, code, body)
		}
	}
}

// TestStartTask: a handler that asks with input requests (2026-07-28) and
// then calls StartTask answers its last round with a task, whose result
// has the answer; a client without the tasks extension gets the result in
// that round instead.
func TestStartTask(t *testing.T) {
	ev := fronttest.NewElicitor(t, nil, nil)
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	type name struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "greet_later"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := elicit.Form[name](ctx, "Your name?", elicit.WithInputKey("user_name"))
		if err != nil {
			return nil, nil, err
		}
		out, err := elicit.StartTask(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + res.Content.Name}}}, nil
		})
		return out, nil, err
	})
	// Another tool runs as a task: the server serves the extension.
	mcp.AddTool(s, &mcp.Tool{Name: "other"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if err := ev.RunAsTask(s, "other", elicit.TaskOptional); err != nil {
		t.Fatal(err)
	}
	u := serveUsers(t, ev, s)

	fronttest.CheckStartTask(t, u, map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{elicit.TasksExtension: map[string]any{}}})
}

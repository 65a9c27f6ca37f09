package fronttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// Error is a JSON-RPC error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Meta is the request _meta of a 2026-07-28 client with capabilities caps.
func Meta(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// Call sends one request on 2026-07-28 to url as user (the bearer token
// "user-"+user) with the client capabilities caps, and returns its result
// or its error. edits, in order, rewrite the body before it is sent.
func Call(t testing.TB, url, user, method string, params, caps map[string]any, edits ...func(body []byte) []byte) (map[string]any, *Error) {
	t.Helper()
	return CallFrom(t, http.DefaultClient, url, user, method, params, caps, edits...)
}

// CallFrom is Call through hc (a client of another local address, say).
func CallFrom(t testing.TB, hc *http.Client, url, user, method string, params, caps map[string]any, edits ...func(body []byte) []byte) (map[string]any, *Error) {
	t.Helper()
	p := maps.Clone(params)
	p["_meta"] = Meta(caps)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	for _, edit := range edits {
		body = edit(body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Authorization", "Bearer user-"+user)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	res, rerr, err := read(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v (HTTP %d)", method, err, resp.StatusCode)
	}
	return res, rerr
}

// read returns the first JSON-RPC response in r, a JSON or an event
// stream body.
func read(r io.Reader) (map[string]any, *Error, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result map[string]any  `json:"result"`
			Error  *Error          `json:"error"`
		}
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if json.Unmarshal([]byte(line), &msg) == nil && len(msg.ID) > 0 && (msg.Result != nil || msg.Error != nil) {
			return msg.Result, msg.Error, nil
		}
	}
	return nil, nil, fmt.Errorf("no JSON-RPC response")
}

// Await polls tasks/get until the task id has status want, and returns
// that tasks/get result; it fails the test after 10 seconds.
func Await(t testing.TB, url, user, id, want string, caps map[string]any) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, rerr := Call(t, url, user, "tasks/get", map[string]any{"taskId": id}, caps)
		if rerr != nil {
			t.Fatalf("tasks/get: %+v", rerr)
		}
		if res["status"] == want {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task status %v, want %s", res["status"], want)
		}
	}
}

// Dump is every entry of st.
func Dump(t testing.TB, st store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		entries, next, err := st.Scan(t.Context(), cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out[e.Key] = string(e.Value)
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}

// CheckStartTask calls the tool greet_later at url as alice: a tool that
// asks for {"name"} under the input key user_name and then starts a task
// that says "Hello, " and the name. A client with the capabilities
// withTasks (which declare the extension) must get a task in the second
// round, whose result has the answer; a client without the extension must
// get the result in that round.
func CheckStartTask(t testing.TB, url string, withTasks map[string]any) {
	t.Helper()
	for _, tc := range []struct {
		name string
		caps map[string]any
	}{
		{"with the extension", withTasks},
		{"without", map[string]any{"elicitation": map[string]any{}}},
	} {
		first, rerr := Call(t, url, "alice", "tools/call", map[string]any{"name": "greet_later", "arguments": map[string]any{}}, tc.caps)
		if rerr != nil || first["resultType"] != "input_required" {
			t.Fatalf("%s: round 1: %v, %+v", tc.name, first, rerr)
		}
		second, rerr := Call(t, url, "alice", "tools/call", map[string]any{"name": "greet_later", "arguments": map[string]any{},
			"requestState":   first["requestState"],
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
		}, tc.caps)
		if rerr != nil {
			t.Fatalf("%s: round 2: %+v", tc.name, rerr)
		}
		result := second
		if tc.caps["extensions"] != nil {
			if second["resultType"] != "task" || second["requestState"] != nil {
				t.Fatalf("%s: round 2: %v, want a task", tc.name, second)
			}
			result = Await(t, url, "alice", second["taskId"].(string), "completed", tc.caps)["result"].(map[string]any)
		} else if second["resultType"] == "task" {
			t.Fatalf("%s: round 2 is a task", tc.name)
		}
		if got := fmt.Sprint(result["content"]); !strings.Contains(got, "Hello, Ada") {
			t.Fatalf("%s: result %v, want the answer", tc.name, got)
		}
	}
}

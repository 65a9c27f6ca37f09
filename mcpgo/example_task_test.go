package mcpgo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A tool that runs as a task: a 2026-07-28 client that declares the tasks
// extension gets the task at once, and polls it with tasks/get until its
// result is there. (mcp-go's client does not speak the extension yet: the
// client here is plain JSON-RPC over HTTP.)
func ExampleServer_RunAsTask() {
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(nil)
	defer st.Close()
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ev.Close()

	s := server.NewMCPServer("reports", "1.0.0")
	front := mcpgo.New(ev, s, nil)
	s.AddTool(mcp.NewTool("build_report"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		time.Sleep(50 * time.Millisecond) // the long part
		return mcp.NewToolResultText("Report ready."), nil
	})
	if err := front.RunAsTask("build_report", elicit.TaskOptional); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(front.Handler(nil))
	defer srv.Close()

	created := post(srv.URL+elicit.MCPPath, "tools/call", map[string]any{"name": "build_report"})
	fmt.Println(created["resultType"], created["status"])
	for {
		task := post(srv.URL+elicit.MCPPath, "tasks/get", map[string]any{"taskId": created["taskId"]})
		if task["status"] == "completed" {
			fmt.Println(task["status"], task["result"].(map[string]any)["content"])
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Output:
	// task working
	// completed [map[text:Report ready. type:text]]
}

// post sends a 2026-07-28 request that declares the tasks extension and
// returns its result.
func post(url, method string, params map[string]any) map[string]any {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "example", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result map[string]any `json:"result"`
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	for _, line := range strings.Split(buf.String(), "\n") {
		if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &msg) == nil && msg.Result != nil {
			return msg.Result
		}
	}
	log.Fatalf("%s: no result: %s", method, buf.String())
	return nil
}

// A handler that gathers its input first, then goes on as a task: the
// client gets the task once the user answered.
func ExampleStartTask() {
	s := server.NewMCPServer("reports", "1.0.0")
	s.AddTool(mcp.NewTool("export"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := elicit.Form[struct {
			Format string `json:"format"`
		}](ctx, "Which format?")
		if err != nil {
			return nil, err
		}
		return mcpgo.StartTask(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Exported as " + res.Content.Format + "."), nil
		})
	})
	fmt.Println("ok")
	// Output: ok
}

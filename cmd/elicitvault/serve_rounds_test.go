package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// serve's --url-round-wait reaches the Elicitor, on both SDKs: the retry
// of a 2026-07-28 URL-mode round whose page is not done answers "still
// waiting" (input required, inputRequests {}, a new requestState) after
// it, not after the default 20 s.
func TestServeURLRoundWait(t *testing.T) {
	for _, sdk := range []string{sdkGo, sdkMCPGo} {
		t.Run(sdk, func(t *testing.T) {
			addr := startServeIn(t, "--sdk", sdk, "--url-round-wait", "300ms")
			client := &http.Client{Timeout: 10 * time.Second}
			call := func(state string, responses map[string]any) (res struct {
				ResultType    string                     `json:"resultType"`
				RequestState  string                     `json:"requestState"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
			}) {
				t.Helper()
				params := map[string]any{"name": "connect_account", "arguments": map[string]any{}, "_meta": map[string]any{
					"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
					"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}},
				}}
				if state != "" {
					params["requestState"], params["inputResponses"] = state, responses
				}
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "connect_account")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if i := bytes.Index(b, []byte("data: ")); i >= 0 {
					b = b[i+len("data: "):]
				}
				var msg struct {
					Result *json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(bytes.TrimSpace(b), &msg); err != nil || msg.Result == nil {
					t.Fatalf("response %q: %v", b, err)
				}
				json.Unmarshal(*msg.Result, &res)
				return res
			}
			r := call("", nil)
			if r.ResultType != "input_required" || len(r.InputRequests) != 1 {
				t.Fatalf("got %+v, want the URL-mode input request", r)
			}
			var key string
			for key = range r.InputRequests {
			}
			start := time.Now()
			w := call(r.RequestState, map[string]any{key: map[string]any{"action": "accept"}})
			if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
				t.Errorf("the round answered after %v, want about 300ms", d.Round(time.Millisecond))
			}
			if w.ResultType != "input_required" || w.InputRequests == nil || len(w.InputRequests) != 0 || w.RequestState == "" || w.RequestState == r.RequestState {
				t.Fatalf("got %+v, want still waiting: inputRequests {} and a new requestState", w)
			}
		})
	}
}

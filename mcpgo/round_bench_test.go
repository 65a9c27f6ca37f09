package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/elicitvault/elicitvault/store/memory"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// BenchmarkRound measures the server's side of one delete_contacts round
// of 2026-07-28 (an input-required result, then the retry with the
// answer), served in process through Handler on a memory store, and, as
// its baseline, through a bare mcp-go server whose tool does the same
// with a plain requestState (as integration/internal/baremcpgo does). It
// reports the process CPU per round (cpu-ns/op), which load on the
// machine disturbs less than the wall time.
func BenchmarkRound(b *testing.B) {
	for _, side := range []string{"bare", "elicitvault"} {
		b.Run(mcp.ProtocolVersion20260728+"/"+side, func(b *testing.B) {
			var h http.Handler
			if side == "bare" {
				h = bareHandler()
			} else {
				h = frontEndHandler(b)
			}
			round(b, h) // warm
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				round(b, h)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
	// Before 2026-07-28 the round is a blocking elicitation/create on the
	// session's stream: a real mcp-go client over loopback HTTP, whose CPU
	// is in the figure too (the same on both sides).
	for _, side := range []string{"bare", "elicitvault"} {
		b.Run("2025-11-25/"+side, func(b *testing.B) {
			var h http.Handler
			if side == "bare" {
				h = bareHandler()
			} else {
				h = frontEndHandler(b)
			}
			srv := httptest.NewServer(h)
			b.Cleanup(srv.Close)
			// The client's log lines (a reply whose call ended first) go
			// nowhere: its transport takes slog's default when made.
			prev := slog.Default()
			slog.SetDefault(slog.New(slog.DiscardHandler))
			u := &user{action: "accept", answer: map[string]any{"confirm": true}}
			c, _ := mcpgo.StartClient(b, srv.URL+elicit.MCPPath, nil, "2025-11-25",
				mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}),
				mcpclient.WithElicitationHandler(u))
			slog.SetDefault(prev)
			// mcp-go's client (v1.2.1) now and then fails a call with
			// "context canceled" before sending it, on either server: such
			// a call is sent again, and counted (resent/op).
			resent := 0
			call := func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "delete_contacts"
				req.Params.Arguments = map[string]any{"count": 3}
				res, err := c.CallTool(b.Context(), req)
				if err != nil && strings.Contains(err.Error(), "context canceled") && b.Context().Err() == nil {
					resent++
					res, err = c.CallTool(b.Context(), req)
				}
				if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "Deleted 3 contacts." {
					b.Fatalf("got %+v, %v", res, err)
				}
			}
			call() // warm
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				call()
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(resent)/float64(b.N), "resent/op")
		})
	}
}

// processCPU is the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const roundCall = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"loadbench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"delete_contacts","arguments":{"count":3}%s}}`

// round runs one round against h as the go-sdk client sends it.
func round(b *testing.B, h http.Handler) {
	first := postRound(b, h, fmt.Sprintf(roundCall, ""))
	var res struct {
		Result struct {
			InputRequests map[string]any `json:"inputRequests"`
			RequestState  string         `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal(first, &res); err != nil || len(res.Result.InputRequests) != 1 {
		b.Fatalf("first response: %s", first)
	}
	var key string
	for k := range res.Result.InputRequests {
		key = k
	}
	// Both are base64url or ASCII names: nothing to escape.
	retry := `,"inputResponses":{"` + key + `":{"action":"accept","content":{"confirm":true}}},"requestState":"` + res.Result.RequestState + `"`
	if out := postRound(b, h, fmt.Sprintf(roundCall, retry)); !strings.Contains(string(out), "Deleted 3 contacts.") {
		b.Fatalf("second response: %s", out)
	}
}

func postRound(b *testing.B, h http.Handler, body string) []byte {
	r := httptest.NewRequest(http.MethodPost, elicit.MCPPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "delete_contacts")
	r.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20260728)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		b.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	return w.Body.Bytes()
}

func frontEndHandler(b *testing.B) http.Handler {
	keys, err := keyring.New([]byte("test secret that is at least 32 bytes long"))
	if err != nil {
		b.Fatal(err)
	}
	st := memory.New(nil)
	b.Cleanup(func() { st.Close() })
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ev.Close() })
	m := server.NewMCPServer("bench", "1", server.WithToolCapabilities(false))
	f := mcpgo.New(ev, m, nil)
	m.AddTool(mcp.NewTool("delete_contacts", mcp.WithNumber("count")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("count", 0)
		ok, err := elicit.Confirm(ctx, fmt.Sprintf("Delete %d contacts? This cannot be undone.", n))
		if err != nil {
			return nil, err
		}
		if !ok {
			return mcp.NewToolResultText("Nothing was deleted."), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("Deleted %d contacts.", n)), nil
	})
	return f.Handler(nil)
}

func bareHandler() http.Handler {
	const state = "bare"
	m := server.NewMCPServer("bench", "1", server.WithToolCapabilities(false), server.WithElicitation())
	m.AddTool(mcp.NewTool("delete_contacts", mcp.WithNumber("count")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("count", 0)
		params := mcp.ElicitationParams{
			Message:         fmt.Sprintf("Delete %d contacts? This cannot be undone.", n),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","default":false}},"required":["confirm"]}`),
		}
		if !server.IsModernRequest(ctx) {
			r, err := m.RequestElicitation(ctx, mcp.ElicitationRequest{
				Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
				Params:  params,
			})
			if err != nil {
				return nil, err
			}
			content, _ := r.Content.(map[string]any)
			if ok, _ := content["confirm"].(bool); !ok || r.Action != mcp.ElicitationResponseActionAccept {
				return mcp.NewToolResultText("Nothing was deleted."), nil
			}
			return mcp.NewToolResultText(fmt.Sprintf("Deleted %d contacts.", n)), nil
		}
		if r := server.ElicitationResponse(req.Params.InputResponses, "confirm"); r != nil && req.Params.RequestState == state {
			content, _ := r.Content.(map[string]any)
			if ok, _ := content["confirm"].(bool); !ok || r.Action != mcp.ElicitationResponseActionAccept {
				return mcp.NewToolResultText("Nothing was deleted."), nil
			}
			return mcp.NewToolResultText(fmt.Sprintf("Deleted %d contacts.", n)), nil
		}
		return server.NewInputRequestBuilder(state).Elicit("confirm", params).ToolResult(), nil
	})
	mux := http.NewServeMux()
	mux.Handle(elicit.MCPPath, server.NewStreamableHTTPServer(m, server.WithEndpointPath(elicit.MCPPath),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	return mux
}

package mcpgo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// slowWriter takes its time over each notification, as a client slow to
// read would: the notifications queued in mcp-go's stdio server wait.
type slowWriter struct{ w io.Writer }

func (s slowWriter) Write(p []byte) (int, error) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(p, &m) == nil && m.ID == nil {
		time.Sleep(200 * time.Microsecond)
	}
	return s.w.Write(p)
}

// On stdio, the elicitation/complete that a call sends just before it
// returns comes before the call's response, also with other notifications
// still queued in mcp-go (which writes those from a goroutine of its own).
func TestStdioCompleteBeforeResponse(t *testing.T) {
	f, _ := newProbe(t)
	f.m.AddTool(mcp.NewTool("finish", mcp.WithString("id")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := engine.PeerFrom(ctx)
		if p == nil {
			return nil, fmt.Errorf("no peer")
		}
		session := server.ClientSessionFromContext(ctx)
		for range 5 {
			session.NotificationChannel() <- mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "notifications/message"}}
		}
		// As the engine sends it at the end of a URL-mode round.
		p.NotifyComplete(context.WithoutCancel(ctx), req.GetString("id", ""))
		return mcp.NewToolResultText("ok"), nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.ServeStdio(ctx, inR, slowWriter{outW}) }()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	for i := range 50 {
		id := fmt.Sprintf("e-%d", i)
		inW.Write(append(modernCall("finish", fmt.Sprintf(`{"id":%q}`, id), "", nil), '\n'))
		completed := false
		for response := false; !response; {
			var l []byte
			select {
			case l = <-lines:
			case <-time.After(10 * time.Second):
				t.Fatalf("call %d: no response", i)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					ElicitationID string `json:"elicitationId"`
				} `json:"params"`
			}
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatalf("call %d: %v: %s", i, err, l)
			}
			switch {
			case m.ID != nil:
				response = true
			case m.Method == string(mcp.MethodNotificationElicitationComplete):
				if m.Params.ElicitationID != id {
					t.Fatalf("call %d: completion of %q, want %q", i, m.Params.ElicitationID, id)
				}
				completed = true
			}
		}
		if !completed {
			t.Fatalf("call %d: the response came before notifications/elicitation/complete", i)
		}
	}
	inW.Close()
	<-done
}

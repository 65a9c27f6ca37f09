package elicit_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// trickle sends a POST to path whose body arrives one byte every 50 ms,
// and returns how long the server kept the connection open (up to
// limit).
func trickle(t *testing.T, addr, path string, limit time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n", path, addr)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := conn.Write([]byte("{")); err != nil {
					return
				}
			}
		}
	}()
	conn.SetReadDeadline(start.Add(limit))
	io.Copy(io.Discard, conn) // until the server closes, or the limit
	return time.Since(start)
}

// A body trickled a byte at a time does not hold a connection past
// HandlerOptions.ReadTimeout, on /mcp and on the pages, even where the
// http.Server sets no ReadTimeout.
func TestTrickledBodyCutOff(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewServer(e.ev.Handler(e.server, &elicit.HandlerOptions{ReadTimeout: 200 * time.Millisecond}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, path := range []string{elicit.MCPPath, elicit.ConsentPath} {
		if d := trickle(t, addr, path, 3*time.Second); d > 2*time.Second {
			t.Errorf("%s: a trickled body kept the connection open for %v, want about 200ms", path, d.Round(time.Millisecond))
		}
	}
}

// The deadlines do not cut a long request: a blocking elicitation whose
// user answers after several read and write timeouts (and the
// http.Server's own ReadTimeout and WriteTimeout) completes.
func TestDeadlinesKeepLongElicitation(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: time.Minute})
	askTool(e, nil)
	srv := httptest.NewUnstartedServer(e.ev.Handler(e.server, &elicit.HandlerOptions{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond}))
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "user", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			time.Sleep(150 * time.Millisecond) // the user reads
			time.Sleep(150 * time.Millisecond)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann", "email": "ann@example.com"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + elicit.MCPPath, HTTPClient: &http.Client{}}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if text := errText(res, err); err != nil || res.IsError || text != "hello Ann" {
		t.Fatalf("a long elicitation: %q, %v", text, err)
	}
}

// A client that stops reading is cut off after WriteTimeout instead of
// holding the handler and its connection for as long as it likes.
func TestStalledReaderCutOff(t *testing.T) {
	wrote := make(chan error, 1)
	h := elicit.WithDeadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 256 { // 16 MiB, far more than the sockets buffer
			if _, err := w.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}), 0, 200*time.Millisecond)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select { // the client never reads
	case err := <-wrote:
		if err == nil {
			t.Fatal("16 MiB written to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler still writes to a client that stopped reading")
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/fronttest"
)

// startServeIn runs serve in this process with args and returns the
// host:port it listens on.
func startServeIn(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan serveResult, 1)
	stderr := &fronttest.LockedBuffer{}
	e := serveEnv(stderr)
	go func() {
		code := run(ctx, e, append([]string{"serve", "--addr", "127.0.0.1:0", "--fallback", "none"}, args...))
		results <- serveResult{code, stderr}
	}()
	endpoint := waitFor(t, stderr, results)
	t.Cleanup(func() {
		cancel()
		if r := <-results; r.code != 0 {
			t.Errorf("serve exited %d:\n%s", r.code, r.stderr)
		}
	})
	return strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")
}

// heldFor returns how long the server keeps conn open (up to limit),
// reading and discarding what it sends.
func heldFor(conn net.Conn, start time.Time, limit time.Duration) time.Duration {
	conn.SetReadDeadline(start.Add(limit))
	io.Copy(io.Discard, conn)
	return time.Since(start)
}

// serve cuts off a body trickled a byte every 50 ms after --read-timeout,
// on /mcp and on the consent page, and closes a keep-alive connection
// idle for --idle-timeout.
func TestServeTimeouts(t *testing.T) {
	addr := startServeIn(t, "--read-timeout", "200ms", "--idle-timeout", "200ms", "--write-timeout", "200ms")
	for _, path := range []string{"/mcp", "/elicit/consent"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n", path, addr)
		go func() {
			for range 60 {
				time.Sleep(50 * time.Millisecond)
				if _, err := conn.Write([]byte("{")); err != nil {
					return
				}
			}
		}()
		if d := heldFor(conn, start, 3*time.Second); d > 2*time.Second {
			t.Errorf("%s: a trickled body kept the connection open for %v", path, d.Round(time.Millisecond))
		}
		conn.Close()
	}

	// A keep-alive connection after one request.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /elicit/consent HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("the server closed the connection after the request: nothing to test")
	}
	start := time.Now()
	conn.SetReadDeadline(start.Add(3 * time.Second))
	io.Copy(io.Discard, br)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("an idle keep-alive connection stayed open for %v", d.Round(time.Millisecond))
	}
}

// serve refuses timeouts and caps that are not positive, and a negative
// round wait.
func TestServeTimeoutFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--read-timeout", "0s"}, {"--write-timeout", "-1s"}, {"--idle-timeout", "0s"}, {"--session-timeout", "0s"},
		{"--max-sessions", "0"}, {"--max-sessions-per-client", "-1"}, {"--trusted-proxies", "10.0.0.1"},
		{"--url-round-wait", "-1s"},
	} {
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &fronttest.LockedBuffer{}, getenv: func(string) string { return "" }}
		if code := run(context.Background(), e, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)); code != 2 {
			t.Errorf("serve %v: exit %d, want 2", args, code)
		}
	}
}

// serve's --max-sessions-per-client reaches the Handler: a client whose
// sessions all hold a stream is refused another with 429 and a JSON-RPC
// error.
func TestServeSessionCapFlag(t *testing.T) {
	addr := startServeIn(t, "--max-sessions-per-client", "2")
	url := "http://" + addr + "/mcp"
	open := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return http.DefaultClient.Do(req)
	}
	for range 2 {
		resp, err := open()
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		stream, err := http.DefaultClient.Do(req)
		if err != nil || stream.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", err, stream)
		}
		defer stream.Body.Close()
	}
	resp, err := open()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"jsonrpc":"2.0"`) {
		t.Fatalf("a third session: %d %s, want 429 and a JSON-RPC error", resp.StatusCode, body)
	}
}

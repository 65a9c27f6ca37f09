package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/procusage"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAbandonedSessionsTwoNodesRedis: one client opens 20,000 sessions
// (ELICITVAULT_ABANDONED_SESSIONS) across two nodes on one Redis store
// and abandons them (no DELETE). Each node keeps at most its
// MaxSessionsPerClient of them (the defaults), so goroutines and memory
// stay bounded, and another client completes an elicitation on each node
// during the flood and after it.
func TestAbandonedSessionsTwoNodesRedis(t *testing.T) {
	raw := serverURL(t, redisEnv)
	n := 20000
	if v := os.Getenv("ELICITVAULT_ABANDONED_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("ELICITVAULT_ABANDONED_SESSIONS=%q", v)
		}
	}
	prefix, _ := redisPrefix(t, raw, "evsessions")
	keys := keysA(t)
	var urls []string
	for range 2 {
		st := mustOpen(t, "redis", raw, prefix)
		ev, err := elicit.New(keys, st, &elicit.Config{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		addTextTool(s, "ask", func(ctx context.Context) (string, error) {
			r, err := elicit.Form[struct {
				Name string `json:"name"`
			}](ctx, "Your name?")
			if err != nil {
				return "", err
			}
			return "hello " + r.Content.Name, nil
		})
		srv := httptest.NewServer(ev.Handler(s, nil))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { ev.Close() })
		urls = append(urls, srv.URL+elicit.MCPPath)
	}
	user := loopbackClient("127.0.0.1", 2)
	askBoth := func() {
		for _, u := range urls {
			if err := elicitOnce(user, u); err != nil {
				t.Fatalf("another client at %s: %v", u, err)
			}
		}
		user.CloseIdleConnections()
	}
	askBoth() // warm up what a session needs once
	base := procusage.Measure()

	attacker := loopbackClient("127.0.0.2", 8)
	start := time.Now()
	flood := make(chan error, 1)
	go func() { flood <- abandonSessions(attacker, urls, n, 8) }()
	askBoth() // during the flood
	if err := <-flood; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	attacker.CloseIdleConnections()
	askBoth() // and after it

	// The race detector's shadow memory is most of RSS under -race.
	procusage.Check(t, fmt.Sprintf("%d sessions opened and abandoned on two nodes in %v (%.0f/s)", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds()),
		base, procusage.Limits{Goroutines: 2*3*32 /* the default MaxSessionsPerClient */ + 40, HeapMiB: 32, RSSMiB: 256})
}

// loopbackClient returns an HTTP client whose connections come from the
// loopback address local: another client than 127.0.0.1 to the server.
func loopbackClient(local string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns}}
}

// elicitOnce connects a go-sdk client and completes the "ask" elicitation.
func elicitOnce(hc *http.Client, url string) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "user", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if err != nil {
		return err
	}
	if len(res.Content) != 1 || res.IsError {
		return fmt.Errorf("result %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello Ann" {
		return fmt.Errorf("result %+v", res.Content[0])
	}
	return nil
}

// abandonSessions initializes n sessions round robin over urls, workers
// at once, and walks away from each.
func abandonSessions(hc *http.Client, urls []string, n, workers int) error {
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`
	return parallel(n, workers, func(i int) error {
		req, _ := http.NewRequest(http.MethodPost, urls[i%len(urls)], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			return fmt.Errorf("session: status %d", resp.StatusCode)
		}
		return nil
	})
}

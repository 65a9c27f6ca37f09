package elicit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/procusage"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// abandonedSessions is how many sessions the abandon tests open:
// ELICITVAULT_ABANDONED_SESSIONS, 6,000 by default: without the cap they
// hold some 34 MiB of heap and a goroutine each, past the bounds below
// (measured: 22 MiB for 4,000); 20,000 (issue 20's figure) takes three
// times as long.
func abandonedSessions(t *testing.T) int {
	n := 6000
	if v := os.Getenv("ELICITVAULT_ABANDONED_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("ELICITVAULT_ABANDONED_SESSIONS=%q", v)
		}
	}
	return n
}

// fromAddr returns an HTTP client whose connections come from the
// loopback address local (127.0.0.2 is another client than 127.0.0.1).
func fromAddr(local string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns}}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one JSON-RPC message, in session id when id is not "".
func post(ctx context.Context, hc *http.Client, url, id, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", legacy)
	}
	return hc.Do(req)
}

// serveHandler serves e's Elicitor.Handler with opts until t ends, and
// returns its MCP endpoint.
func serveHandler(t *testing.T, e *env, opts *elicit.HandlerOptions) string {
	t.Helper()
	srv := httptest.NewServer(e.ev.Handler(e.server, opts))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath
}

// mustOpenSession opens a session as openSession does, and returns its
// ID or fails t.
func mustOpenSession(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	id, status, body, err := openSession(hc, url)
	if err != nil || id == "" {
		t.Fatalf("opening a session: %v (HTTP %d: %s)", err, status, body)
	}
	return id
}

// openSession initializes a session and walks away from it (no DELETE).
// It returns the session ID, or "" and the response's status and body.
func openSession(hc *http.Client, url string) (id string, status int, body string, err error) {
	resp, err := post(context.Background(), hc, url, "", initializeBody)
	if err != nil {
		return "", 0, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, string(b), nil
	}
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, string(b), nil
}

// abandon opens n sessions from hc, with workers at once, and abandons
// them; it fails on any refusal.
func abandon(t *testing.T, hc *http.Client, urls []string, n, workers int) {
	t.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || failed.Load() != nil {
					return
				}
				id, status, body, err := openSession(hc, urls[i%int64(len(urls))])
				if err != nil || id == "" {
					failed.Store(fmt.Sprintf("session %d: %v %d %s", i, err, status, body))
					return
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
}

// profileTool registers "ask", a form elicitation whose answer it returns.
func askTool(e *env, ended chan<- error) {
	e.tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		p, err := elicit.Form[profile](ctx, "Your profile?", withProfile)
		if ended != nil {
			ended <- err
		}
		if err != nil {
			return "", err
		}
		return "hello " + p.Content.Name, nil
	})
}

// elicitFrom connects a go-sdk client from hc at url and completes one
// elicitation with it.
func elicitFrom(t *testing.T, hc *http.Client, url string) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "user", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann", "email": "ann@example.com"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatalf("another client cannot connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if text := errText(res, err); err != nil || res.IsError || text != "hello Ann" {
		t.Fatalf("another client's elicitation: %q, %v", text, err)
	}
}

// One client opens 6,000 sessions (abandonedSessions) and abandons them
// (no DELETE): the
// node keeps at most MaxSessionsPerClient of them (the oldest idle one is
// closed for each new one), so goroutines and memory stay bounded, and
// another client connects and completes an elicitation, during the flood
// and after it.
func TestAbandonedSessionsBounded(t *testing.T) {
	n := abandonedSessions(t)
	e := newEnv(t, nil)
	askTool(e, nil)
	url := serveHandler(t, e, nil) // the defaults
	user := fromAddr("127.0.0.1", 2)
	elicitFrom(t, user, url) // warm up what a session needs once
	user.CloseIdleConnections()
	base := procusage.Measure()

	attacker := fromAddr("127.0.0.2", 8)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		abandon(t, attacker, []string{url}, n, 8)
	}()
	elicitFrom(t, user, url) // during the flood
	<-done
	elapsed := time.Since(start)
	attacker.CloseIdleConnections()
	user.CloseIdleConnections()
	elicitFrom(t, user, url) // and after it
	user.CloseIdleConnections()

	// Evicted sessions close in the background (Check waits for them).
	// Without the cap, each session holds about 15 KiB. The race
	// detector's shadow memory is most of RSS under -race (some 90 MiB
	// here, 5 MiB without it).
	procusage.Check(t, fmt.Sprintf("%d sessions opened and abandoned in %v (%.0f/s)", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds()),
		base, procusage.Limits{Goroutines: 3*elicit.DefaultMaxSessionsPerClient + 20, HeapMiB: 16, RSSMiB: 192})
}

// askRaw starts a tools/call of "ask" in session id and returns once the
// client was asked (elicitation/create on the call's stream), leaving
// the call waiting; cancel drops the call's HTTP request.
func askRaw(t *testing.T, hc *http.Client, url, id string) (cancel func()) {
	t.Helper()
	resp, err := post(context.Background(), hc, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, stop := context.WithCancel(context.Background())
	resp, err = post(ctx, hc, url, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "elicitation/create") {
			return func() { stop(); resp.Body.Close() }
		}
	}
	stop()
	t.Fatalf("no elicitation on the call's stream: %v", sc.Err())
	return nil
}

// A session whose client walked away from a waiting call is idle: the
// next session over the client's bound closes it, and the waiting call
// ends with ErrSessionEvicted; the evicted session is gone (404).
func TestEvictedSessionEndsWaitingCall(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: time.Minute})
	ended := make(chan error, 2)
	askTool(e, ended)
	url := serveHandler(t, e, &elicit.HandlerOptions{MaxSessionsPerClient: 1})
	hc := fromAddr("127.0.0.1", 4)
	a := mustOpenSession(t, hc, url)
	askRaw(t, hc, url, a)() // asked, then the client goes away
	var b string
	for deadline := time.Now().Add(5 * time.Second); b == ""; {
		var status int
		var body string
		var err error
		b, status, body, err = openSession(hc, url)
		if err != nil || (b == "" && status != http.StatusTooManyRequests) {
			t.Fatalf("second session: %v %d %s", err, status, body)
		}
		if b == "" && time.Now().After(deadline) {
			t.Fatal("the first session never became idle")
		}
	}
	select {
	case err := <-ended:
		if !errors.Is(err, elicit.ErrSessionEvicted) || !errors.Is(err, elicit.ErrSessionEnded) {
			t.Errorf("the waiting call got %v, want ErrSessionEvicted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting call of the evicted session did not end")
	}
	// The go-sdk forgets the session once the eviction's Close, which runs
	// beside the new session's request, has returned: within moments.
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := post(context.Background(), hc, url, a, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the evicted session still answers %d, want 404", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.assertEmpty()
}

// holdStream opens session id's standalone stream (GET) and returns once
// the server answered its headers.
func holdStream(t *testing.T, hc *http.Client, url, id string) (closeStream func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", legacy)
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	return func() { cancel(); resp.Body.Close() }
}

// A client whose sessions are all busy (a stream open) is refused a new
// one over its bound with 429 and a JSON-RPC error; over the total bound,
// with 503. Other clients are not affected by one client's bound.
func TestSessionCapRefusesBusyClient(t *testing.T) {
	e := newEnv(t, nil)
	askTool(e, nil)
	url := serveHandler(t, e, &elicit.HandlerOptions{MaxSessionsPerClient: 2, MaxSessions: 3})
	hc := fromAddr("127.0.0.2", 4)
	for range 2 {
		id := mustOpenSession(t, hc, url)
		defer holdStream(t, hc, url, id)()
	}
	_, status, body, err := openSession(hc, url)
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &rpc) != nil || rpc.JSONRPC != "2.0" || rpc.Error.Code == 0 || !strings.Contains(rpc.Error.Message, "too many sessions") {
		t.Fatalf("over the client's bound: %d %s, want 429 and a JSON-RPC error", status, body)
	}

	// A third client takes the last place and holds it; then the total
	// is reached with nothing idle.
	other := fromAddr("127.0.0.3", 4)
	id := mustOpenSession(t, other, url)
	defer holdStream(t, other, url, id)()
	_, status, body, _ = openSession(fromAddr("127.0.0.4", 1), url)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"jsonrpc":"2.0"`) {
		t.Fatalf("over the total bound: %d %s, want 503 and a JSON-RPC error", status, body)
	}
}

// A session idle for SessionTimeout closes: its waiting call ends with
// ErrSessionEnded and what it left pending is deleted, with no goroutine
// of the Handler's waiting for the end.
func TestHandlerIdleSessionEnds(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: time.Minute})
	ended := make(chan error, 1)
	askTool(e, ended)
	url := serveHandler(t, e, &elicit.HandlerOptions{SessionTimeout: 200 * time.Millisecond})
	hc := fromAddr("127.0.0.1", 4)
	id := mustOpenSession(t, hc, url)
	askRaw(t, hc, url, id)()
	select {
	case err := <-ended:
		if !errors.Is(err, elicit.ErrSessionEnded) || errors.Is(err, elicit.ErrSessionEvicted) {
			t.Errorf("the waiting call got %v, want ErrSessionEnded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the idle session's waiting call did not end")
	}
	e.assertEmpty()
}

// An LLM-mediated elicitation left pending by a session the Handler holds
// is deleted when the session times out, and no goroutine waits for that
// meanwhile.
func TestHandlerLeftoverWithoutGoroutine(t *testing.T) {
	e := newEnv(t, llmConfig)
	e.counted("profile")
	srv := httptest.NewServer(e.ev.Handler(e.server, &elicit.HandlerOptions{SessionTimeout: 500 * time.Millisecond}))
	t.Cleanup(srv.Close)
	hc := fromAddr("127.0.0.1", 4)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + elicit.MCPPath, HTTPClient: hc, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	pendingOf(t, callTool(t, cs, "profile", nil))
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "elicit.(*Elicitor).leave") {
		t.Errorf("a goroutine waits for the session's end:\n%s", stacks)
	}
	// The client goes away without a DELETE.
	e.assertEmpty()
}

// ForwardedFor believes X-Forwarded-For only from the trusted proxies,
// and only as far as they wrote it: the rightmost address that is not a
// trusted proxy's.
func TestForwardedFor(t *testing.T) {
	client := elicit.ForwardedFor(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"))
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"192.0.2.7:4000", nil, "192.0.2.7:4000"},
		{"192.0.2.7:4000", []string{"198.51.100.1"}, "192.0.2.7:4000"}, // not from a proxy: ignored
		{"10.1.2.3:4000", nil, "10.1.2.3:0"},
		{"10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1:0"},
		{"10.1.2.3:4000", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1:0"}, // the client wrote the first
		{"10.1.2.3:4000", []string{"203.0.113.9, 198.51.100.1, 10.9.9.9"}, "198.51.100.1:0"},
		{"10.1.2.3:4000", []string{"203.0.113.9", "198.51.100.1"}, "198.51.100.1:0"},
		{"10.1.2.3:4000", []string{"junk, 10.9.9.9"}, "10.9.9.9:0"}, // stops at what a proxy did not write
		{"[fd00::1]:4000", []string{"2001:db8::5"}, "[2001:db8::5]:0"},
		{"[::ffff:10.1.2.3]:4000", []string{"198.51.100.1"}, "198.51.100.1:0"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := client(r); got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
}

// Behind a trusted proxy, each forwarded client has its own bound: one
// client's flood through the proxy does not refuse another's session.
func TestSessionCapBehindProxy(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewServer(e.ev.Handler(e.server, &elicit.HandlerOptions{
		MaxSessionsPerClient: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + elicit.MCPPath
	hc := fromAddr("127.0.0.1", 4)
	open := func(client string) (string, int) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Forwarded-For", client)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode
	}
	a, _ := open("198.51.100.1")
	defer holdStream(t, hc, url, a)()
	if _, status := open("198.51.100.1"); status != http.StatusTooManyRequests {
		t.Errorf("the same forwarded client over its bound: %d, want 429", status)
	}
	if b, status := open("198.51.100.2"); b == "" {
		t.Errorf("another forwarded client: %d, want a session", status)
	}
}

// A POST that creates no session the go-sdk keeps (its first message is
// not an initialize) takes no place: it does not evict the client's idle
// session.
func TestSessionCapCountsOnlyInitialized(t *testing.T) {
	e := newEnv(t, nil)
	url := serveHandler(t, e, &elicit.HandlerOptions{MaxSessionsPerClient: 2})
	hc := fromAddr("127.0.0.1", 4)
	a := mustOpenSession(t, hc, url)
	for range 3 {
		resp, err := post(context.Background(), hc, url, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := post(context.Background(), hc, url, a, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the idle session after requests that created none: %d, want 200", resp.StatusCode)
	}
}

// With authentication (HandlerOptions.MCP), the client is the user: two
// users from one address have a bound each, and one user from two
// addresses has one bound.
func TestSessionCapPerUser(t *testing.T) {
	e := newEnv(t, nil)
	url := serveHandler(t, e, &elicit.HandlerOptions{MaxSessionsPerClient: 1, MCP: auth.RequireBearerToken(verifyUser, nil)})
	open := func(from, user string) (string, int) {
		hc := fromAddr(from, 1)
		hc.Transport = &bearer{"user-" + user, hc.Transport}
		id, status, _, err := openSession(hc, url)
		if err != nil {
			t.Fatal(err)
		}
		if id != "" {
			stream := holdStream(t, hc, url, id)
			t.Cleanup(stream)
		}
		return id, status
	}
	if a, status := open("127.0.0.2", "alice"); a == "" {
		t.Fatalf("alice: %d", status)
	}
	if b, status := open("127.0.0.2", "bob"); b == "" {
		t.Errorf("bob, from alice's address: %d, want a session", status)
	}
	if _, status := open("127.0.0.3", "alice"); status != http.StatusTooManyRequests {
		t.Errorf("alice from another address over her bound: %d, want 429", status)
	}
}

package elicit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/storefault"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// verifyUser authenticates the bearer token "user-X" as X.
func verifyUser(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	if user, ok := strings.CutPrefix(tok, "user-"); ok {
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
	}
	return nil, auth.ErrInvalidToken
}

// statelessServer serves e over stateless Streamable HTTP; a bearer token
// "user-X" authenticates X, no token is anonymous.
func (e *env) statelessServer() string {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	authed := auth.RequireBearerToken(verifyUser, nil)(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			h.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	}))
	e.t.Cleanup(srv.Close)
	return srv.URL
}

func (e *env) httpClient(url, user, version string) *mcp.ClientSession {
	e.t.Helper()
	hc := http.DefaultClient
	if user != "" {
		hc = &http.Client{Transport: &bearer{"user-" + user, http.DefaultTransport}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// Without a real session (stateless HTTP), clients share no "one pending
// elicitation per session" slot: neither two anonymous clients nor one
// user's two chats cancel each other's LLM-mediated question.
func TestSessionlessClientsShareNoSlot(t *testing.T) {
	for _, user := range []string{"", "alice"} {
		t.Run("user="+user, func(t *testing.T) {
			forBoth(t, func(t *testing.T, version string) {
				e := newEnv(t, llmConfig)
				runs := e.counted("profile")
				url := e.statelessServer()
				a, b := e.httpClient(url, user, version), e.httpClient(url, user, version)
				pa := pendingOf(t, callTool(t, a, "profile", nil))
				pb := pendingOf(t, callTool(t, b, "profile", nil))
				for i, c := range []struct {
					cs *mcp.ClientSession
					p  pending
				}{{a, pa}, {b, pb}} {
					res := submit(t, c.cs, c.p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
					if res.IsError {
						t.Fatalf("client %d: %q: one client's question cancelled the other's", i, text(res))
					}
				}
				if n := runs.Load(); n != 4 {
					t.Errorf("handler ran %d times, want 4", n)
				}
			})
		})
	}
}

// The quotas: MaxPendingPerSubject per authenticated user, MaxPending per
// Elicitor; an answered elicitation frees its place.
func TestPendingQuota(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPending: 3, MaxPendingPerSubject: 2})
	e.counted("profile")
	url := e.statelessServer()
	alice, bob := e.httpClient(url, "alice", mrtr), e.httpClient(url, "bob", mrtr)
	p1 := pendingOf(t, callTool(t, alice, "profile", nil))
	pendingOf(t, callTool(t, alice, "profile", nil))
	if res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile"}); err == nil && !res.IsError {
		t.Fatalf("alice's third pending elicitation accepted: %q", text(res))
	} else if msg := errText(res, err); !strings.Contains(msg, elicit.ErrTooManyPending.Error()) {
		t.Fatalf("alice's third: %q", msg)
	}
	pendingOf(t, callTool(t, bob, "profile", nil))
	if res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile"}); err == nil && !res.IsError {
		t.Fatal("a fourth pending elicitation on the server accepted")
	} else if msg := errText(res, err); !strings.Contains(msg, elicit.ErrTooManyPending.Error()) {
		t.Fatalf("server's fourth: %q", msg)
	}
	if res := submit(t, alice, p1.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"}); res.IsError {
		t.Fatalf("answer: %q", text(res))
	}
	pendingOf(t, callTool(t, bob, "profile", nil))
}

func errText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return err.Error()
	}
	return text(res)
}

func connectHTTP(t *testing.T, url string, hc *http.Client, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// flood calls tool n times from cs, w at a time, and returns how many
// calls got a pending elicitation; every other one must be refused with
// ErrTooManyPending.
func flood(t *testing.T, cs *mcp.ClientSession, tool string, args any, n, w int) int {
	t.Helper()
	var asked, next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
				switch msg := errText(res, err); {
				case err == nil && !res.IsError && res.Meta[elicit.MetaElicitationPending] != nil:
					asked.Add(1)
				case !strings.Contains(msg, elicit.ErrTooManyPending.Error()):
					t.Errorf("flood: %.200q", msg)
					return
				}
			}
		})
	}
	wg.Wait()
	return int(asked.Load())
}

// One anonymous client cannot take every pending slot of a server (issue
// 20, item 9): 1,000 unauthenticated 2026-07-28 calls from one address,
// with the default quotas, get their questions up to the per-client bound
// (100) and are refused beyond it (without that bound the 10,000 of
// DefaultMaxPending would fill the server; 1,000 show the bound holds as
// well, in a tenth of the time); a client from another address still gets its
// question, and so does a 2025-11-25 client (its session is its identity)
// from the same address.
func TestAnonymousClientTakesNotEverySlot(t *testing.T) {
	e := newEnv(t, llmConfig)
	e.counted("profile")
	url := serveHandler(t, e, nil)

	attacker := connectHTTP(t, url, fromAddr("127.0.0.1", 16), mute, mrtr)
	if n := flood(t, attacker, "profile", nil, 10*elicit.DefaultMaxPendingPerSubject, 8); n != elicit.DefaultMaxPendingPerSubject {
		t.Errorf("one anonymous client got %d questions asked, want %d", n, elicit.DefaultMaxPendingPerSubject)
	}

	other := connectHTTP(t, url, fromAddr("127.0.0.2", 16), mute, mrtr)
	if res, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile"}); err != nil || res.Meta[elicit.MetaElicitationPending] == nil {
		t.Errorf("another anonymous client: %q", errText(res, err))
	}

	legacyClient := connectHTTP(t, url, fromAddr("127.0.0.1", 16), &mcp.ClientOptions{
		ElicitationHandler: answer("accept", map[string]any{"name": "Ann", "email": "ann@example.com"}),
	}, legacy)
	if got, isErr := call(t, legacyClient, "profile"); isErr || !strings.HasPrefix(got, "accept {Name:Ann") {
		t.Errorf("a 2025-11-25 client: %q", got)
	}
}

// An anonymous stateless client's pending records are bounded in bytes
// (issue 26): 250 calls with 244 KiB of arguments each from one address
// park at most DefaultMaxPendingBytesPerSubject on the node (a memory
// store, so the records are on its heap), not 61 MiB; a client from
// another address still gets its question. The TTL is an hour, so that no
// record expires while the calls run (they take minutes on a loaded
// machine under the race detector) and frees its slot.
func TestAnonymousPendingBytes(t *testing.T) {
	cfg := *llmConfig
	cfg.TTL = time.Hour
	e := newEnv(t, &cfg)
	type blobArgs struct {
		Blob string `json:"blob"`
	}
	mcp.AddTool(e.server, &mcp.Tool{Name: "blob"}, func(ctx context.Context, req *mcp.CallToolRequest, _ blobArgs) (*mcp.CallToolResult, any, error) {
		if _, err := profileTool(ctx, req); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	url := serveHandler(t, e, nil)
	args := blobArgs{Blob: strings.Repeat("x", 244<<10)}

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	client := connectHTTP(t, url, fromAddr("127.0.0.1", 16), mute, mrtr)
	before := heap()
	n := flood(t, client, "blob", args, 250, 4)
	grown := int64(heap()) - int64(before)
	if max := elicit.DefaultMaxPendingBytesPerSubject / (244 << 10); n < 1 || n > max {
		t.Errorf("%d calls of 244 KiB got their question asked; want 1 to %d", n, max)
	}
	if grown > 16<<20 {
		t.Errorf("the heap grew by %d MiB", grown>>20)
	}
	t.Logf("%d asked, heap grew by %d KiB", n, grown>>10)

	other := connectHTTP(t, url, fromAddr("127.0.0.2", 16), mute, mrtr)
	if res, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "blob", Arguments: args}); err != nil || res.Meta[elicit.MetaElicitationPending] == nil {
		t.Errorf("another anonymous client: %q", errText(res, err))
	}
}

// Behind a proxy every client has the proxy's address: the Handler's
// client (HandlerOptions.TrustedProxies, as for the session caps) tells
// them apart by what the proxy forwarded. Two clients with
// other forwarded addresses have a quota each; the same one shares it.
func TestClientIDBehindProxy(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingPerSubject: 2})
	e.counted("profile")
	srv := httptest.NewServer(e.ev.Handler(e.server, &elicit.HandlerOptions{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}))
	t.Cleanup(srv.Close)
	as := func(client string) *mcp.ClientSession {
		hc := &http.Client{Transport: &header{"X-Forwarded-For", client, http.DefaultTransport}}
		return connectHTTP(t, srv.URL+elicit.MCPPath, hc, mute, mrtr)
	}
	a1, a2, b := as("192.0.2.1"), as("192.0.2.1"), as("192.0.2.2")
	if n := flood(t, a1, "profile", nil, 3, 1); n != 2 {
		t.Errorf("client A asked %d, want 2", n)
	}
	if n := flood(t, a2, "profile", nil, 1, 1); n != 0 {
		t.Errorf("client A on another connection asked %d, want 0", n)
	}
	if n := flood(t, b, "profile", nil, 2, 1); n != 2 {
		t.Errorf("client B asked %d, want 2", n)
	}
}

// header sets a request header.
type header struct {
	name, value string
	next        http.RoundTripper
}

func (h *header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// A link given to the model (URL mode, LLM-mediated) counts against the
// quotas like any other pending elicitation: one anonymous client gets as
// many as its bound.
func TestPendingQuotaLinkViaModel(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingPerSubject: 3, BaseURL: "https://mcp.example.com"})
	e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		a, err := elicit.URL(ctx, "Connect your account")
		return string(a), err
	})
	srv := httptest.NewServer(e.ev.Handler(e.server, nil))
	t.Cleanup(srv.Close)
	cs := connectHTTP(t, srv.URL+elicit.MCPPath, nil, mute, mrtr)
	if n := flood(t, cs, "connect", map[string]any{}, 5, 1); n != 3 {
		t.Errorf("one anonymous client got %d links, want 3", n)
	}
}

// A client at its bound is refused without reading its records back at
// every call: once a read-back found them all pending, the next calls
// within a second are refused outright, so that refused calls do not cost
// the store a read per pending record each.
func TestPendingQuotaReadBackBounded(t *testing.T) {
	st := &storefault.CountGets{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	ev, err := elicit.New((*keyring.Keyring)(newKeyring(t)), st, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingPerSubject: 10})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	(&env{t: t, server: s}).tool("profile", profileTool)
	srv := httptest.NewServer(ev.Handler(s, nil))
	t.Cleanup(srv.Close)
	cs := connectHTTP(t, srv.URL+elicit.MCPPath, nil, mute, mrtr)
	start := time.Now()
	if n := flood(t, cs, "profile", nil, 200, 1); n != 10 {
		t.Fatalf("asked %d, want 10", n)
	}
	// One read-back of 10 records per second of the flood, and a few
	// more for the calls that were not refused.
	if gets, max := st.Gets.Load(), 10*(int64(time.Since(start)/time.Second)+1)+20; gets > max {
		t.Errorf("%d store reads for 190 refused calls, want at most %d", gets, max)
	}
}

// The total byte bound: records of 100 KiB from four clients under a
// bound of 350 KiB; the fourth is refused until an answer frees room.
func TestPendingQuotaTotalBytes(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingBytes: 350 << 10})
	type blobArgs struct {
		Blob string `json:"blob"`
	}
	mcp.AddTool(e.server, &mcp.Tool{Name: "blob"}, func(ctx context.Context, req *mcp.CallToolRequest, _ blobArgs) (*mcp.CallToolResult, any, error) {
		if _, err := profileTool(ctx, req); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	srv := httptest.NewServer(e.ev.Handler(e.server, &elicit.HandlerOptions{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}))
	t.Cleanup(srv.Close)
	args := blobArgs{Blob: strings.Repeat("x", 100<<10)}
	var clients []*mcp.ClientSession
	var first pending
	for i := range 4 {
		hc := &http.Client{Transport: &header{"X-Forwarded-For", fmt.Sprint("192.0.2.", i+1), http.DefaultTransport}}
		cs := connectHTTP(t, srv.URL+elicit.MCPPath, hc, mute, mrtr)
		clients = append(clients, cs)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "blob", Arguments: args})
		switch {
		case i < 3 && (err != nil || res.Meta[elicit.MetaElicitationPending] == nil):
			t.Fatalf("client %d: %.200q", i, errText(res, err))
		case i == 0:
			first = pendingOf(t, res)
		case i == 3 && !strings.Contains(errText(res, err), elicit.ErrTooManyPending.Error()):
			t.Fatalf("client 3 beyond the total bytes: %.200q", errText(res, err))
		}
	}
	if got := text(submit(t, clients[0], first.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})); got != "done" {
		t.Fatalf("answer: %q", got)
	}
	if res, err := clients[3].CallTool(context.Background(), &mcp.CallToolParams{Name: "blob", Arguments: args}); err != nil || res.Meta[elicit.MetaElicitationPending] == nil {
		t.Errorf("client 3 after an answer: %.200q", errText(res, err))
	}
}

// A server that mounts the go-sdk's stateless handler itself tells
// anonymous clients apart with WithClientID in a middleware of its own.
func TestWithClientID(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingPerSubject: 2})
	e.counted("profile")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(elicit.WithClientID(r.Context(), r.Header.Get("X-Test-Client"))))
	}))
	t.Cleanup(srv.Close)
	as := func(client string) *mcp.ClientSession {
		return connectHTTP(t, srv.URL, &http.Client{Transport: &header{"X-Test-Client", client, http.DefaultTransport}}, mute, mrtr)
	}
	if n := flood(t, as("a"), "profile", nil, 3, 1); n != 2 {
		t.Errorf("client a asked %d, want 2", n)
	}
	if n := flood(t, as("b"), "profile", nil, 1, 1); n != 1 {
		t.Errorf("client b asked %d, want 1", n)
	}
}

// The tasks an anonymous stateless client runs at once are bounded per
// address too (MaxPendingPerSubject, the call's client ID): client A's
// second task is refused at a bound of 1, client B's first, from another
// address, is not.
func TestAnonymousTasksPerClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &elicit.Config{MaxPendingPerSubject: 1})
	t.Cleanup(func() { e.ev.Close() })
	e.tool("confirm", func(ctx context.Context, _ *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Confirm(ctx, "Proceed?") // waits for tasks/update
		return "", err
	})
	if err := e.ev.RunAsTask(e.server, "confirm", elicit.TaskOptional); err != nil {
		t.Fatal(err)
	}
	url := serveHandler(t, e, nil)
	start := func(local string) (map[string]any, *fronttest.Error) {
		return fronttest.CallFrom(t, fromAddr(local, 1), url, "", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}}, taskCaps)
	}
	if res, rerr := start("127.0.0.1"); rerr != nil || res["resultType"] != "task" {
		t.Fatalf("client A's first task: %v, %+v", res, rerr)
	}
	if res, rerr := start("127.0.0.1"); rerr == nil || !strings.Contains(rerr.Message, elicit.ErrTooManyPending.Error()) {
		t.Errorf("client A's second task: %v, %+v; want refused", res, rerr)
	}
	if res, rerr := start("127.0.0.2"); rerr != nil || res["resultType"] != "task" {
		t.Errorf("client B's first task, from another address: %v, %+v", res, rerr)
	}
}

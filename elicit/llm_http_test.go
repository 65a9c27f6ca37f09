package elicit_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/keyring"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// The LLM-mediated answer may land on another node: two stateless
// Streamable HTTP servers (2026-07-28) share a store, requests alternate
// between them. The elicitation is bound to the authenticated user: the
// answer of another user is refused; the user's own continues the tool on
// the other node.
func TestModelAcrossNodesAndUsers(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	keys := newKeyring(t)
	var runs [2]atomic.Int32
	var nodes [2]http.Handler
	for i := range nodes {
		nodes[i] = auth.RequireBearerToken(verifyUser, nil)(profileNode(t, st, keys, &runs[i]))
	}
	lb := answersToSecondNode(t, nodes)

	connect := func(user string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint:   lb.URL,
			HTTPClient: &http.Client{Transport: &bearer{"user-" + user, http.DefaultTransport}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("alice"), connect("bob")

	p := pendingOf(t, callTool(t, alice, "profile", nil))
	res := submit(t, bob, p.ID, "accept", map[string]any{"name": "Bob", "email": "bob@example.com"})
	if !res.IsError || !strings.Contains(text(res), elicit.ErrUnknownElicitation.Error()) {
		t.Fatalf("another user's answer: %q (error %v)", text(res), res.IsError)
	}
	res = submit(t, alice, p.ID, "accept", map[string]any{"name": "Alice", "email": "alice@example.com"})
	if res.IsError || !strings.HasPrefix(text(res), "accept {Name:Alice") {
		t.Fatalf("alice: %q (error %v)", text(res), res.IsError)
	}
	if runs[0].Load() != 1 || runs[1].Load() != 1 {
		t.Errorf("runs per node %d, %d: want the call on node 0 and its continuation on node 1", runs[0].Load(), runs[1].Load())
	}
}

// profileNode is a stateless HTTP node with keys on st, with the
// LLM-mediated tool "profile" (runs counts its calls and continuations).
func profileNode(t *testing.T, st store.Store, keys *ring.Keyring, runs *atomic.Int32) http.Handler {
	t.Helper()
	e := newEnvOn(t, st, llmConfig, keys)
	e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		return profileTool(ctx, req)
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// profileNodes starts a stateless HTTP node per keyring on st, each with
// the LLM-mediated tool "profile" (runs counts its continuations), and
// returns a client session of each.
func profileNodes(t *testing.T, st store.Store, runs *atomic.Int32, rings ...*ring.Keyring) []*mcp.ClientSession {
	t.Helper()
	var clients []*mcp.ClientSession
	for _, keys := range rings {
		srv := httptest.NewServer(profileNode(t, st, keys, runs))
		t.Cleanup(srv.Close)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		clients = append(clients, cs)
	}
	return clients
}

// During a rotation two nodes have different primaries. Concurrent answers
// to one LLM-mediated elicitation, half on each node, still continue the
// tool once: the one-shot marker is blinded under the secret that was
// primary when the question was asked, on every node.
func TestModelAnsweredOnceDuringRotation(t *testing.T) {
	st := &slowMarkers{memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	oldSecret := []byte("rotation test secret OLD, thirty-two bytes")
	newSecret := []byte("rotation test secret NEW, thirty-two bytes")
	var runs atomic.Int32
	clients := profileNodes(t, st, &runs,
		mustRing(ring.New(oldSecret, [][]byte{newSecret})), mustRing(ring.New(newSecret, [][]byte{oldSecret})))
	p := pendingOf(t, callTool(t, clients[0], "profile", nil))
	continuedOnce(t, answerOnBoth(t, clients, p.ID), &runs)
}

// answerOnBoth sends 8 concurrent answers to the elicitation id, half on
// clients[0] and half on clients[1], and returns the index of the client
// of each answer that continued the tool (the others are refused or get
// its result again).
func answerOnBoth(t *testing.T, clients []*mcp.ClientSession, id string) []int {
	t.Helper()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		continued []int
	)
	for i := range 8 {
		wg.Go(func() {
			res := submit(t, clients[i%2], id, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
			if !res.IsError && res.Meta[elicit.MetaElicitationReplayed] == nil {
				mu.Lock()
				continued = append(continued, i%2)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return continued
}

// continuedOnce fails t unless exactly one answer continued the tool and
// the handler ran twice (the call, its continuation).
func continuedOnce(t *testing.T, continued []int, runs *atomic.Int32) {
	t.Helper()
	if c, r := len(continued), runs.Load(); c != 1 || r != 2 {
		t.Errorf("%d answers continued the tool, the handler ran %d times; want 1 and 2", c, r)
	}
}

// slowMarkers holds every PutIfAbsent back a little, so that concurrent
// answers all read the pending elicitation before any is marked.
type slowMarkers struct{ store.Store }

func (s *slowMarkers) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	time.Sleep(50 * time.Millisecond)
	return s.Store.PutIfAbsent(ctx, key, value, expiry)
}

// Issue 20, item 11: on a stateless server without authentication
// (2026-07-28), one client's link answers no other client. Client A's
// model relays its link and the user accepts on the page; client B, making
// the same call with the same arguments, is asked for its own link, and
// only A's sendElicitationResult with A's ID gets A's answer.
func TestURLViaModelSessionless(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, store: st, keys: newKeyring(t)}
	ev, err := elicit.New((*keyring.Keyring)(e.keys), st, llmConfig)
	if err != nil {
		t.Fatal(err)
	}
	e.ev = ev
	e.server = mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
	ev.Install(e.server)
	pages := e.callback()
	e.tool("connect", urlTool(pages.URL))
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := connect(), connect()
	var args map[string]any // the same arguments
	idA, linkA := urlPending(t, callTool(t, a, "connect", args), pages.URL)
	if s := get(t, linkA); s != http.StatusOK {
		t.Fatalf("A's page: %d", s)
	}
	resB := callTool(t, b, "connect", args)
	if !strings.Contains(text(resB), "Link: ") {
		t.Fatalf("B got %q, not a link of its own: A's answer reached another client", text(resB))
	}
	if idB, _ := urlPending(t, resB, pages.URL); idB == idA {
		t.Fatal("B was handed A's elicitation")
	}
	if got := submit(t, a, idA, "accept", nil); got.IsError || text(got) != "accept" {
		t.Fatalf("A: %q", text(got))
	}
}

// answersToSecondNode is a balancer over two nodes that sends the calls of
// the fallback tool (the model's answers) to nodes[1] and everything else
// to nodes[0], so that every answer lands on the node that did not ask.
func answersToSecondNode(t *testing.T, nodes [2]http.Handler) *httptest.Server {
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		node := 0
		if bytes.Contains(body, []byte(elicit.FallbackTool)) {
			node = 1
		}
		nodes[node].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	return lb
}

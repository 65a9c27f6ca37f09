package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/pages"
)

// TestAnswerFaults faults every store command that node A sends while an
// answer the user gave travels to the tool, one at a time, with every kind
// of fault, on Redis and on PostgreSQL (issue 26). Two nodes share the
// store, each with a store client of its own; A's is wrapped. For each
// path, a clean run records the commands A sends from the moment the user
// answers to the end of the call; then each of them is faulted in turn, so
// that a command a change adds is covered without editing the test. The
// client re-sends what failed, as a client would (the same answer, the
// same requestState, the same page), to A while it lives, else to B.
// Verdict per trial: the tool ran exactly once with the answer (0 lost, 0
// run twice).
//
// The paths: LLM-mediated, 2026-07-28 form, and those of a 2025-11-25
// session: blocking form, BrowserForm; and, with
// ELICITVAULT_ANSWER_FAULTS=full, which scripts/faults sets, the URL-mode
// ones: 2026-07-28 URL mode, blocking URL mode and -32042. Those take
// minutes (their pages wait up to 2 s for the call to take each answer),
// which CI's 15 minutes cannot spare. A session
// lives on its node: when A dies, the client's re-send opens a new session
// on B, which asks again, and the user answers again; that is no loss.
// When A lived, a second question is: the user's first answer was lost.
//
// The kinds of fault:
//   - late: the command is held, its sender sees a timeout, and the store
//     applies it later;
//   - cut: the connection drops before the command reaches the store;
//   - lost: the store applies the command and the reply is lost;
//   - killed: node A dies right there: the command is not sent, A sends
//     nothing more and serves nothing more, its connections drop, and B
//     takes over.
//
// A killed node's requests in flight lose their connections at once, as a
// dead process's do: the go-sdk does not stop a tool call whose client went
// away, so a harness that kept them open would hold the client's call until
// the wait in it ends (a URL-mode wait rides out a store that does not
// answer until the elicitation expires, and the re-send then finds the
// requestState expired: the "10 Get killed" loss of issue 26 was that).
func TestAnswerFaults(t *testing.T) {
	paths := []faultPath{
		{name: "llm-mediated", run: llmTrial},
		{name: "2026-07-28-form", run: mrtrTrial(elicit.ModeForm)},
		{name: "blocking-form", run: sessionTrial("form")},
		{name: "browser-form", run: sessionTrial("browser")},
	}
	if os.Getenv("ELICITVAULT_ANSWER_FAULTS") == "full" {
		paths = append(paths,
			faultPath{name: "2026-07-28-url", run: mrtrTrial(elicit.ModeURL)},
			faultPath{name: "blocking-url", run: sessionTrial(string(elicit.ModeURL))},
			faultPath{name: "url-required", run: sessionTrial("url-required")})
	}
	for _, b := range sharedBackends("evfault") {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // the trials mostly wait: the two stores side by side
			for _, p := range paths {
				t.Run(p.name, func(t *testing.T) { runFaultPath(t, b, p) })
			}
		})
	}
}

type faultKind string

const (
	faultLate   faultKind = "late"
	faultCut    faultKind = "cut"
	faultLost   faultKind = "lost"
	faultKilled faultKind = "killed"
)

var faultKinds = []faultKind{faultLate, faultCut, faultLost, faultKilled}

// errInjected is the error a faulted command returns.
var errInjected = errors.New("injected store fault: i/o timeout")

// faultStore is node A's store client: it records the commands sent while
// armed, and faults the one numbered at.
type faultStore struct {
	store.Store
	dead  atomic.Bool   // node A is dead: it sends nothing more
	gone  chan struct{} // closed when A dies
	kill1 sync.Once
	label string // in traces (ELICITVAULT_FAULT_TRACE)

	mu    sync.Mutex
	armed bool
	sent  []string
	at    int
	kind  faultKind
	late  sync.WaitGroup
}

// kill kills node A: its store client sends nothing more and its requests
// in flight lose their connections, as a process's do when it dies.
func (f *faultStore) kill() {
	f.kill1.Do(func() {
		f.dead.Store(true)
		close(f.gone)
	})
}

func (f *faultStore) arm() {
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
}

func (f *faultStore) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// do sends the command name, which run applies, through the fault.
func (f *faultStore) do(ctx context.Context, name string, run func(context.Context) error) error {
	if f.dead.Load() {
		return errInjected
	}
	f.mu.Lock()
	hit := false
	if f.armed {
		hit = len(f.sent) == f.at
		f.sent = append(f.sent, name)
	}
	f.mu.Unlock()
	if !hit {
		err := run(ctx)
		if os.Getenv("ELICITVAULT_FAULT_TRACE") != "" {
			fmt.Printf("%s %s %s -> %v\n", time.Now().Format("05.000"), f.label, name, err)
		}
		return err
	}
	if os.Getenv("ELICITVAULT_FAULT_TRACE") != "" {
		fmt.Printf("%s %s %s FAULT %s\n", time.Now().Format("05.000"), f.label, name, f.kind)
	}
	switch f.kind {
	case faultLate:
		f.late.Go(func() {
			// The command reaches the store late: within the claim's
			// lease on the real server's key, after the client was told
			// it failed. The lease is the server's real time, so this
			// sleep stays (CONTRIBUTING.md).
			time.Sleep(300 * time.Millisecond)
			run(context.Background())
		})
		time.Sleep(50 * time.Millisecond)
	case faultLost:
		run(ctx)
	case faultKilled:
		f.kill()
	}
	return errInjected
}

func (f *faultStore) Put(ctx context.Context, k string, v []byte, e time.Time) error {
	return f.do(ctx, "Put", func(ctx context.Context) error { return f.Store.Put(ctx, k, v, e) })
}

func (f *faultStore) Get(ctx context.Context, k string) (v []byte, err error) {
	err = f.do(ctx, "Get", func(ctx context.Context) (e error) { v, e = f.Store.Get(ctx, k); return e })
	return v, err
}

func (f *faultStore) Take(ctx context.Context, k string) (v []byte, err error) {
	err = f.do(ctx, "Take", func(ctx context.Context) (e error) { v, e = f.Store.Take(ctx, k); return e })
	return v, err
}

func (f *faultStore) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (ok bool, err error) {
	err = f.do(ctx, "PutIfAbsent", func(ctx context.Context) (er error) { ok, er = f.Store.PutIfAbsent(ctx, k, v, e); return er })
	return ok, err
}

func (f *faultStore) Swap(ctx context.Context, k string, v []byte, e time.Time) (old []byte, err error) {
	err = f.do(ctx, "Swap", func(ctx context.Context) (er error) { old, er = f.Store.Swap(ctx, k, v, e); return er })
	return old, err
}

func (f *faultStore) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (ok bool, err error) {
	err = f.do(ctx, "CompareAndSwap", func(ctx context.Context) (er error) {
		ok, er = f.Store.CompareAndSwap(ctx, k, old, v, e)
		return er
	})
	return ok, err
}

func (f *faultStore) Delete(ctx context.Context, k string) error {
	return f.do(ctx, "Delete", func(ctx context.Context) error { return f.Store.Delete(ctx, k) })
}

func (f *faultStore) Publish(ctx context.Context, ch string, m []byte) error {
	return f.do(ctx, "Publish", func(ctx context.Context) error { return f.Store.Publish(ctx, ch, m) })
}

func (f *faultStore) Subscribe(ctx context.Context, ch string) (sub store.Subscription, err error) {
	err = f.do(ctx, "Subscribe", func(ctx context.Context) (er error) { sub, er = f.Store.Subscribe(ctx, ch); return er })
	if err != nil && sub != nil {
		sub.Close() // subscribed, but the reply was lost: nobody holds it
		sub = nil
	}
	return sub, err
}

// sharedBackend makes a fresh namespace on a real server (a Redis prefix,
// a PostgreSQL schema, named kind and a random suffix, removed when the
// test ends) and returns a function that opens store clients on it, as the
// processes of a cluster have.
type sharedBackend struct {
	name      string
	namespace func(t *testing.T) (open func() store.Store)
}

func sharedBackends(kind string) []sharedBackend {
	return []sharedBackend{
		{name: "redis", namespace: func(t *testing.T) func() store.Store {
			raw := serverURL(t, redisEnv)
			prefix, _ := redisPrefix(t, raw, kind)
			return func() store.Store { return mustOpen(t, "redis", raw, prefix) }
		}},
		{name: "postgres", namespace: func(t *testing.T) func() store.Store {
			raw := serverURL(t, postgresEnv)
			schema, _ := migratedSchema(t, raw, kind+"_")
			return func() store.Store { return mustOpen(t, "postgres", raw, schema) }
		}},
	}
}

// faultPath is one path an answer takes; run plays one trial on c and
// returns the tool's runs with its answer.
type faultPath struct {
	name string
	run  func(t *testing.T, c *faultCluster) (runs int, outcome string)
}

// faultCluster is two nodes on one store, behind a balancer that sends
// everything to A while it lives, else to B.
type faultCluster struct {
	a     *faultStore
	asks  atomic.Int32 // the questions the user answered (stateful paths)
	runsA atomic.Int32 // the tool's runs on A
	lb    *httptest.Server
	runs  sync.Map // trial → *atomic.Int32
	next  atomic.Int64
}

const faultLease = 400 * time.Millisecond

// newFaultCluster starts nodes A (on a, wrapped) and B (on b), store
// clients of one namespace; stop stops them.
func newFaultCluster(t *testing.T, a, b store.Store) (c *faultCluster, stop func()) {
	keys := keysA(t)
	c = &faultCluster{a: &faultStore{Store: a, at: -1, label: "A", gone: make(chan struct{})}, lb: httptest.NewUnstartedServer(nil)}
	var closers []func()
	var nodes [2]http.Handler
	for i, st := range []store.Store{c.a, &faultStore{Store: b, at: -1, label: "B"}} {
		ev, err := elicit.New(keys, st, &elicit.Config{
			Fallbacks: []elicit.Fallback{elicit.LLMMediated, elicit.BrowserForm},
			OpenBrowser: func(_ context.Context, link string) error {
				go c.browse(link) // the user answers the browser form
				return nil
			},
			ClaimLease: faultLease,
			TTL:        time.Minute,
			BaseURL:    "http://" + c.lb.Listener.Addr().String(),
			Logger:     slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		dead := func() bool { return i == 0 && c.a.dead.Load() }
		mcp.AddTool(s, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Trial int64  `json:"trial"`
			Mode  string `json:"mode,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			var action elicit.Action
			var res elicit.Result[pendingProfile]
			switch in.Mode {
			case string(elicit.ModeURL):
				action, err = elicit.URL(ctx, "Sign in")
			case "url-required":
				action, err = elicit.URL(ctx, "Sign in", elicit.WithURLElicitationRequiredError())
			case "browser":
				res, err = elicit.Form[pendingProfile](ctx, "Your name?", elicit.WithFallbacks(elicit.BrowserForm))
				action = res.Action
			default:
				res, err = elicit.Form[pendingProfile](ctx, "Your name?")
				action = res.Action
			}
			if err != nil {
				return nil, nil, err
			}
			if dead() {
				return nil, nil, errors.New("node A is dead") // a dead process runs nothing
			}
			n, _ := c.runs.LoadOrStore(in.Trial, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			if i == 0 {
				c.runsA.Add(1)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + string(action)}}}, nil, nil
		})
		nodes[i] = ev.Handler(s, &elicit.HandlerOptions{})
		closers = append(closers, func() { ev.Close() })
	}
	c.lb.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.a.dead.Load() {
			nodes[1].ServeHTTP(w, r)
			return
		}
		// A request in flight on A when it dies loses its connection at
		// once: A writes nothing more (its handler, which the go-sdk does
		// not stop, goes on alone in the background, and its store client
		// is dead).
		dw := &deadWriter{w: w}
		served := make(chan struct{})
		go func() {
			defer close(served)
			nodes[0].ServeHTTP(dw, r)
		}()
		select {
		case <-served:
		case <-c.a.gone:
			dw.detach()
			panic(http.ErrAbortHandler) // the connection drops
		}
	})
	c.lb.Start()
	return c, func() {
		c.lb.Close()
		for _, f := range closers {
			f()
		}
	}
}

// deadWriter is node A's side of a connection, which its handler can
// go on writing to after the connection dropped.
type deadWriter struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	detached bool
}

func (w *deadWriter) detach() {
	w.mu.Lock()
	w.detached = true
	w.mu.Unlock()
}

func (w *deadWriter) Header() http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.detached {
		return http.Header{}
	}
	return w.w.Header()
}

func (w *deadWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.detached {
		return 0, errors.New("node A is dead")
	}
	return w.w.Write(b)
}

func (w *deadWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.detached {
		w.w.WriteHeader(code)
	}
}

func (w *deadWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.detached {
		http.NewResponseController(w.w).Flush()
	}
}

func (c *faultCluster) runsOf(trial int64) int {
	n, ok := c.runs.Load(trial)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

func (c *faultCluster) client(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: c.lb.URL + elicit.MCPPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// resend sends call until it gets an answer that is not a failure worth
// re-sending (a store error, an answer in progress), as a client would,
// for up to 8 tries spread over a few leases.
func resend(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	var err error
	for range 8 {
		res, err = cs.CallTool(ctx, p)
		if os.Getenv("ELICITVAULT_FAULT_VERBOSE") != "" {
			fmt.Printf("%s: %.200s\n", time.Now().Format("05.000"), pendingText(res, err))
		}
		if err == nil && !(res.IsError && retryable(pendingText(res, nil))) {
			return res, nil
		}
		if err != nil && !retryable(err.Error()) {
			return res, err
		}
		time.Sleep(faultLease / 2)
	}
	return res, err
}

func retryable(msg string) bool {
	return strings.Contains(msg, "store") || strings.Contains(msg, "progress") || strings.Contains(msg, "being processed") ||
		strings.Contains(msg, "fault") || strings.Contains(msg, "dead") || strings.Contains(msg, "oneshot") ||
		strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") || // the node died
		strings.Contains(msg, "terminated without response")
}

// llmTrial: the model relays the answer with FallbackTool.
func llmTrial(t *testing.T, c *faultCluster) (int, string) {
	ctx := t.Context()
	trial := c.next.Add(1)
	cs := c.client(t, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"trial": trial}})
	if err != nil {
		t.Fatalf("asking: %v", err)
	}
	p, _ := res.Meta["elicitationPending"].(map[string]any)
	id, _ := p["elicitId"].(string)
	if id == "" {
		t.Fatalf("asking: %.200s", pendingText(res, nil))
	}
	c.a.arm() // the user answers from here on
	res, err = resend(ctx, cs, &mcp.CallToolParams{Name: "sendElicitationResult", Arguments: map[string]any{
		"elicitId": id, "action": "accept", "content": map[string]any{"name": "Ann"},
	}})
	return c.runsOf(trial), pendingText(res, err)
}

// mrtrTrial: a 2026-07-28 client answers the input request (a form, or a
// consent page it opens) and retries with the requestState.
func mrtrTrial(mode elicit.Mode) func(t *testing.T, c *faultCluster) (int, string) {
	return func(t *testing.T, c *faultCluster) (int, string) {
		ctx := t.Context()
		trial := c.next.Add(1)
		cs := c.client(t, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("the test answers the input requests itself")
			},
		})
		call := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"trial": trial, "mode": string(mode)}}
		first, err := cs.CallTool(ctx, call)
		if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
			t.Fatalf("asking: %v %.200s", err, pendingText(first, err))
		}
		c.a.arm() // the user answers from here on
		responses := mcp.InputResponseMap{}
		for k, r := range first.InputRequests {
			ep, ok := r.(*mcp.ElicitParams)
			if !ok {
				t.Fatalf("input request %T", r)
			}
			responses[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}
			if mode == elicit.ModeURL {
				responses[k] = &mcp.ElicitResult{Action: "accept"}
				if err := acceptPage(ep.URL, c.lb.URL); err != nil {
					return c.runsOf(trial), "page: " + err.Error()
				}
			}
		}
		retry := *call
		retry.InputResponses, retry.RequestState = responses, first.RequestState
		res, err := resend(ctx, cs, &retry)
		return c.runsOf(trial), pendingText(res, err)
	}
}

// sessionTrial: a 2025-11-25 client, with a session on one node, calls
// the tool, which asks in one of the ways of a stateful session: a form
// the client answers in the middle of the call ("form"), a URL-mode page
// the user accepts while the call waits ("url"), the error -32042 and its
// page, then the retry ("url-required"), or the BrowserForm fallback for a
// client without elicitation, which the user answers in the browser
// ("browser"). A call that fails is sent again, as a client would, in a new
// session when the connection to its node broke (the session died with the
// node: it asks again there, and the user answers again).
func sessionTrial(mode string) func(t *testing.T, c *faultCluster) (int, string) {
	return func(t *testing.T, c *faultCluster) (int, string) {
		ctx := t.Context()
		trial := c.next.Add(1)
		opts := &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				c.asks.Add(1)
				c.a.arm() // the user answers from here on
				if req.Params.Mode == string(elicit.ModeURL) {
					if err := acceptPage(req.Params.URL, c.lb.URL); err != nil {
						return nil, err
					}
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
			},
		}
		if mode == "browser" {
			opts = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
		}
		connect := func() *mcp.ClientSession {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: c.lb.URL + elicit.MCPPath},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				return nil
			}
			return cs
		}
		call := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"trial": trial, "mode": mode}}
		var res *mcp.CallToolResult
		var err error
		cs := connect()
		defer func() {
			if cs != nil {
				cs.Close()
			}
		}()
		for range 10 {
			if cs == nil {
				err = errors.New("cannot connect")
			} else {
				res, err = cs.CallTool(ctx, call)
			}
			if os.Getenv("ELICITVAULT_FAULT_VERBOSE") != "" {
				fmt.Printf("%s: %.200s\n", time.Now().Format("05.000"), pendingText(res, err))
			}
			if errCode(err) == mcp.CodeURLElicitationRequired {
				// The user answers the page, then the client retries.
				var data struct {
					Elicitations []*mcp.ElicitParams `json:"elicitations"`
				}
				if json.Unmarshal(errData(err), &data) != nil || len(data.Elicitations) != 1 {
					return c.runsOf(trial), "-32042: " + string(errData(err))
				}
				c.asks.Add(1)
				c.a.arm()
				// A page that failed for good (its node died) shows the
				// user no "Done": the retry asks again.
				acceptPage(data.Elicitations[0].URL, c.lb.URL)
				continue
			}
			var we *jsonrpc.Error
			broken := err != nil && !errors.As(err, &we)
			if err == nil && !(res.IsError && retryable(pendingText(res, nil))) {
				break
			}
			if err != nil && !broken && !retryable(err.Error()) {
				break
			}
			if broken {
				// The connection broke: the session is gone with its node.
				if cs != nil {
					cs.Close()
				}
				cs = connect()
			}
			time.Sleep(faultLease / 2)
		}
		return c.runsOf(trial), pendingText(res, err)
	}
}

// browse answers the BrowserForm page link (Accept, with a name), again
// while it answers 5xx, as a user would.
func (c *faultCluster) browse(link string) {
	c.asks.Add(1)
	c.a.arm() // the user answers from here on
	u, err := url.Parse(link)
	if err != nil {
		return
	}
	form := url.Values{"_nonce": {u.Query().Get("n")}, "_action": {"accept"}, "name": {"Ann"}}
	u.RawQuery = ""
	for range 8 {
		resp, err := http.PostForm(u.String(), form)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
		}
		time.Sleep(faultLease / 2)
	}
}

// acceptPage answers the consent page of link on base (Accept), again
// while it answers 409 or 5xx, as a user would who sees "try again".
func acceptPage(link, base string) error {
	_, err := pages.Accept(link, base, 8, faultLease/2)
	return err
}

// runFaultPath records the commands of a clean trial of p, then faults
// each with each kind, in a fresh cluster per trial.
func runFaultPath(t *testing.T, b sharedBackend, p faultPath) {
	open := b.namespace(t)
	a, b2 := open(), open()
	clean, stop := newFaultCluster(t, a, b2)
	runs, out := p.run(t, clean)
	stop()
	if runs != 1 || clean.asks.Load() > 1 {
		t.Fatalf("clean run: the tool ran %d times, the user was asked %d times: %s", runs, clean.asks.Load(), out)
	}
	cmds := clean.a.commands()
	t.Logf("%d commands after the answer: %s", len(cmds), strings.Join(cmds, " "))
	var lost, twice int
	for i, cmd := range cmds {
		for _, kind := range faultKinds {
			if only := os.Getenv("ELICITVAULT_FAULT_ONLY"); only != "" && only != fmt.Sprintf("%d %s", i, kind) {
				continue
			}
			c, stop := newFaultCluster(t, a, b2)
			c.a.at, c.a.kind = i, kind
			trial := c.next.Load() + 1
			_, out := p.run(t, c)
			c.a.late.Wait()
			// A late command, a node's leftovers: what runs once the
			// claim's lease on the real server's key has passed (real
			// time, so the sleep stays: CONTRIBUTING.md).
			time.Sleep(faultLease)
			runs, asks := c.runsOf(trial), c.asks.Load()
			stop()
			switch {
			case kind == faultKilled && runs == 2 && asks == 2 && c.runsA.Load() == 1:
				// A ran the tool and died before its reply left: the
				// client's session died with it, and its new session
				// asked again. Two answers, one run each.
				t.Logf("%d %s %s: A died after the tool ran, before its reply; asked again in a new session", i, cmd, kind)
			case asks > 1 && kind != faultKilled:
				// The user had to answer again, though the node that
				// took the answer lived: the first answer was lost.
				lost++
				t.Errorf("%d %s %s: the user was asked %d times: %.300s", i, cmd, kind, asks, out)
			case runs == 0:
				lost++
				t.Errorf("%d %s %s: the answer was lost: %.300s", i, cmd, kind, out)
			case runs > 1:
				twice++
				t.Errorf("%d %s %s: the tool ran %d times", i, cmd, kind, runs)
			default:
				if os.Getenv("ELICITVAULT_FAULT_VERBOSE") != "" {
					t.Logf("%d %s %s: ok", i, cmd, kind)
				}
			}
		}
	}
	t.Logf("%d faults: %d lost, %d run twice", len(cmds)*len(faultKinds), lost, twice)
}

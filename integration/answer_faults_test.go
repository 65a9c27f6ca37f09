package integration

import (
	"context"
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
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/redis"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// The kinds of fault:
//   - late: the command is held, its sender sees a timeout, and the store
//     applies it later;
//   - cut: the connection drops before the command reaches the store;
//   - lost: the store applies the command and the reply is lost;
//   - killed: node A dies right there: the command is not sent, A sends
//     nothing more and serves nothing more, and B takes over.
//
// The 2026-07-28 URL path runs only with ELICITVAULT_ANSWER_FAULTS=full
// (scripts/faults sets it): its kill cases wait out the 30 s read-back of a
// commit, about ten minutes in all, and one case still loses its answer
// ("10 Get killed", issue 26 is open for it), so CI cannot carry it yet.
func TestAnswerFaults(t *testing.T) {
	paths := []faultPath{
		{name: "llm-mediated", run: llmTrial},
		{name: "2026-07-28-form", run: mrtrTrial(elicit.ModeForm)},
	}
	if os.Getenv("ELICITVAULT_ANSWER_FAULTS") == "full" {
		paths = append(paths, faultPath{name: "2026-07-28-url", run: mrtrTrial(elicit.ModeURL)})
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
	dead atomic.Bool // node A is dead: it sends nothing more

	mu    sync.Mutex
	armed bool
	sent  []string
	at    int
	kind  faultKind
	late  sync.WaitGroup
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
		return run(ctx)
	}
	switch f.kind {
	case faultLate:
		f.late.Go(func() {
			time.Sleep(300 * time.Millisecond)
			run(context.Background())
		})
		time.Sleep(50 * time.Millisecond)
	case faultLost:
		run(ctx)
	case faultKilled:
		f.dead.Store(true)
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
			return func() store.Store {
				s, err := redis.New(t.Context(), raw, &redis.Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{name: "postgres", namespace: func(t *testing.T) func() store.Store {
			raw := serverURL(t, postgresEnv)
			ctx := context.Background()
			schema := kind + "_" + randomName()
			pool, err := pgxpool.New(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := postgres.Migrate(ctx, pool, &postgres.Options{Schema: schema}); err != nil {
				pool.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
					t.Errorf("dropping the test schema: %v", err)
				}
				pool.Close()
			})
			return func() store.Store {
				s, err := postgres.New(ctx, raw, &postgres.Options{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
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
	a    *faultStore
	lb   *httptest.Server
	runs sync.Map // trial → *atomic.Int32
	next atomic.Int64
}

const faultLease = 400 * time.Millisecond

// newFaultCluster starts nodes A (on a, wrapped) and B (on b), store
// clients of one namespace; close stops them.
func newFaultCluster(t *testing.T, a, b store.Store) (c *faultCluster, close func()) {
	keys, err := keyring.New([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	c = &faultCluster{a: &faultStore{Store: a, at: -1}, lb: httptest.NewUnstartedServer(nil)}
	var closers []func()
	var nodes [2]http.Handler
	for i, st := range []store.Store{c.a, b} {
		ev, err := elicit.New(keys, st, &elicit.Config{
			Fallbacks:  []elicit.Fallback{elicit.LLMMediated},
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
			if in.Mode == string(elicit.ModeURL) {
				action, err = elicit.URL(ctx, "Sign in")
			} else {
				var res elicit.Result[pendingProfile]
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
		nodes[0].ServeHTTP(w, r)
	})
	c.lb.Start()
	return c, func() {
		c.lb.Close()
		for _, f := range closers {
			f()
		}
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
		strings.Contains(msg, "fault") || strings.Contains(msg, "dead") || strings.Contains(msg, "oneshot")
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
	p, _ := res.Meta[elicit.MetaElicitationPending].(map[string]any)
	id, _ := p["elicitId"].(string)
	if id == "" {
		t.Fatalf("asking: %.200s", pendingText(res, nil))
	}
	c.a.arm() // the user answers from here on
	res, err = resend(ctx, cs, &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{
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

// acceptPage answers the consent page of link on base (Accept), again
// while it answers 409 or 5xx, as a user would who sees "try again".
func acceptPage(link, base string) error {
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	bu, _ := url.Parse(base)
	u.Host = bu.Host
	var last error
	for range 8 {
		resp, err := http.PostForm(u.String(), url.Values{"action": {"accept"}})
		if err != nil {
			last = err
		} else {
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500:
				last = fmt.Errorf("callback %d", resp.StatusCode)
			default:
				return fmt.Errorf("callback %d", resp.StatusCode)
			}
		}
		time.Sleep(faultLease / 2)
	}
	return last
}

// runFaultPath records the commands of a clean trial of p, then faults
// each with each kind, in a fresh cluster per trial.
func runFaultPath(t *testing.T, b sharedBackend, p faultPath) {
	open := b.namespace(t)
	a, b2 := open(), open()
	clean, stop := newFaultCluster(t, a, b2)
	runs, out := p.run(t, clean)
	stop()
	if runs != 1 {
		t.Fatalf("clean run: the tool ran %d times: %s", runs, out)
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
			time.Sleep(faultLease) // a late command, a node's leftovers
			runs := c.runsOf(trial)
			stop()
			switch {
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

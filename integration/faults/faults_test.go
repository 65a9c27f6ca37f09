// Package faults is elicitvault's fault suite: two `elicitvault serve`
// processes share a Redis or PostgreSQL server of the test's own, each
// through a TCP proxy of the test's own, while go-sdk clients run every
// path of elicitation (blocking form, 2026-07-28 input requests, URL
// mode, LLM-mediated) and the suite partitions the nodes from the store,
// adds latency, drops connections, restarts the store and SIGKILLs a node.
// The nodes have different primary secrets (a rotation half rolled out)
// and different SDKs: A serves through the go-sdk, B through the mcp-go
// front-end (serve --sdk mcp-go), so that every path crosses both: the
// stateful sessions sit on either, the stateless requests and the pages
// land on the other.
//
// Each attempt of each operation calls the serve's fault_probe tool with
// an identifier of its own; the tool appends it to a log shared by both
// nodes once it ran after an accepted answer. At the end the suite prints
// the round trips, the answers lost (an operation that never completed
// after every fault healed: must be 0), the attempts that ran twice (an
// identifier logged twice: must be 0) and the errors clients saw, by kind.
//
// CI runs a small size. scripts/faults runs the full size: 200 sessions
// and `elicitvault rotate` in a loop (ELICITVAULT_FAULTS_SESSIONS,
// ELICITVAULT_FAULTS_ROTATE=1).
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"

	"github.com/elicitvault/elicitvault/integration/internal/pages"
	"github.com/elicitvault/elicitvault/internal/fronttest"
)

const (
	secretOld = "AiV0gzskrj8zCzqtZycooKLT3gWbj_IaebpjcFX_wJI"
	secretNew = "XQmoFRmX_sBSNjLZqC5IeM8w-B9Ag6hNx-H1PYFUEsE"
)

// The paths: blocking form and URL mode (2025-11-25, stateful, on one
// node), input requests for a form and for URL mode (2026-07-28,
// stateless, every request on either node), LLM-mediated (2026-07-28).
var paths = []string{"form", "mrtr", "url", "urlmrtr", "llm"}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite runs processes for tens of seconds")
	}
	sessions := envInt("ELICITVAULT_FAULTS_SESSIONS", 2) // per path
	rotate := os.Getenv("ELICITVAULT_FAULTS_ROTATE") == "1"
	for _, kind := range []string{"redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			var b backend
			if kind == "redis" {
				b = startRedis(t)
			} else {
				b = startPostgres(t)
			}
			runFaults(t, b, sessions, rotate)
		})
	}
}

// tally counts what the clients saw.
type tally struct {
	roundTrips, lost atomic.Int64
	failures         atomic.Int64 // failed attempts
	mu               sync.Mutex
	errs             map[string]int
}

var idRE = regexp.MustCompile(`[A-Za-z0-9_-]{16,}|127\.0\.0\.1:\d+|\d{3,}`)

func (t *tally) err(path string, err error) {
	msg := idRE.ReplaceAllString(err.Error(), "…")
	if r := []rune(msg); len(r) > 110 {
		msg = string(r[:110])
	}
	t.mu.Lock()
	t.errs[path+": "+msg]++
	t.mu.Unlock()
	t.failures.Add(1)
}

// waitRoundTrips waits until the clients completed n more round trips,
// for at most a minute (the clients then report what they lost), and
// reports false if ctx ended first.
func (t *tally) waitRoundTrips(ctx context.Context, n int64) bool {
	want := t.roundTrips.Load() + n
	for end := time.Now().Add(time.Minute); t.roundTrips.Load() < want && time.Now().Before(end); {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// retryPause is how long a client waits before its attempt number
// attempt+1: 50ms more each time, at most 200ms.
func retryPause(attempt int) time.Duration {
	return min(time.Duration(50*(attempt+1))*time.Millisecond, 200*time.Millisecond)
}

// twoNodes starts the nodes A (go-sdk) and B (mcp-go) on b, each through
// a proxy of its own, mid-rotation (A seals under OLD, B under NEW), and
// the round-robin load
// balancer of the stateless requests; it returns the probe's log, the
// nodes, the balancer's URL and the proxies.
func twoNodes(t *testing.T, b backend) (logPath string, nodes []*node, lbURL string, pa, pb *proxy) {
	logPath = filepath.Join(t.TempDir(), "runs.log")
	pa, pb = newProxy(t, b.addr()), newProxy(t, b.addr())
	probe := "ELICITVAULT_FAULT_PROBE_LOG=" + logPath
	a := startNode(t, "A", "go-sdk", b.url(pa.addr()), []string{probe, "MCP_ELICITATION_SECRET=" + secretOld, "MCP_ELICITATION_SECRET_PREVIOUS=" + secretNew})
	bn := startNode(t, "B", "mcp-go", b.url(pb.addr()), []string{probe, "MCP_ELICITATION_SECRET=" + secretNew, "MCP_ELICITATION_SECRET_PREVIOUS=" + secretOld})
	nodes = []*node{a, bn}
	var rr atomic.Int64
	lb := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			n := nodes[rr.Add(1)%2]
			u, _ := url.Parse(n.base())
			r.SetURL(u)
			r.Out.Host = u.Host
		},
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "node unreachable", http.StatusBadGateway)
		},
	})
	t.Cleanup(lb.Close)
	return logPath, nodes, lb.URL, pa, pb
}

func runFaults(t *testing.T, b backend, sessions int, rotate bool) {
	logPath, nodes, lbURL, pa, pb := twoNodes(t, b)
	bn := nodes[1]

	tl := &tally{errs: make(map[string]int)}
	faultsDone := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var rotations atomic.Int64
	var bg sync.WaitGroup
	if rotate {
		bg.Go(func() {
			for ctx.Err() == nil {
				cmd := exec.CommandContext(ctx, servebin.Path(t), "rotate", "--store", b.url(b.addr()))
				cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+secretNew, "MCP_ELICITATION_SECRET_PREVIOUS="+secretOld)
				if cmd.Run() == nil {
					rotations.Add(1)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	bg.Go(func() {
		defer close(faultsDone)
		// Each fault comes when the clients have completed a round trip
		// per path since the one before ended: the load runs, on a system
		// that came back.
		step := func(what string, f func()) {
			if !tl.waitRoundTrips(ctx, int64(len(paths))) {
				return
			}
			t.Logf("fault: %s", what)
			f()
		}
		// The faults' durations are the subject: real time on connections
		// and processes of their own (see CONTRIBUTING.md).
		step("latency 20ms per chunk, 1.5s", func() {
			var wg sync.WaitGroup
			wg.Go(func() { pa.slow(20*time.Millisecond, 1500*time.Millisecond) })
			wg.Go(func() { pb.slow(20*time.Millisecond, 1500*time.Millisecond) })
			wg.Wait()
		})
		step("partition of both nodes from the store, 2s", func() {
			var wg sync.WaitGroup
			wg.Go(func() { pa.partition(2 * time.Second) })
			wg.Go(func() { pb.partition(2 * time.Second) })
			wg.Wait()
		})
		step("dropped connections", func() { pa.drop(); pb.drop() })
		step("store restart", func() { b.restart(t) })
		step("SIGKILL node B, restart when the clients failed on it once per session, or after 1s", func() {
			failed := tl.failures.Load() + int64(len(paths)*sessions)
			bn.kill()
			for end := time.Now().Add(time.Second); tl.failures.Load() < failed && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			bn.start(t)
		})
	})

	var wg sync.WaitGroup
	start := time.Now()
	for _, path := range paths {
		for s := range sessions {
			wg.Go(func() { session(ctx, t, tl, nil, path, s, nodes, lbURL, faultsDone) })
		}
	}
	wg.Wait()
	cancel()
	bg.Wait()
	elapsed := time.Since(start)

	// The log: every attempt ran at most once.
	runs, twice := checkRuns(t, logPath)
	kinds := tl.kinds()
	var report strings.Builder
	fmt.Fprintf(&report, "faults: %d sessions per path × %d paths, %s: round trips %d, lost %d, run twice %d, runs logged %d, rotations %d\n",
		sessions, len(paths), elapsed.Round(time.Second), tl.roundTrips.Load(), tl.lost.Load(), twice, len(runs), rotations.Load())
	report.WriteString(tl.lines(kinds))
	t.Log(report.String())
	fmt.Print(report.String())
	if tl.lost.Load() != 0 {
		t.Errorf("%d operations lost", tl.lost.Load())
	}
	if tl.roundTrips.Load() == 0 {
		t.Error("no round trip")
	}
	for _, k := range kinds {
		if strings.Contains(k, "panic") {
			t.Errorf("a client saw a panic: %s", k)
		}
	}
	for _, n := range nodes {
		if log := n.log(); strings.Contains(log, secretOld) || strings.Contains(log, secretNew) || strings.Contains(log, "ev1.") || strings.Contains(log, "ev2.") || strings.Contains(log, "panic") {
			t.Errorf("node %s's stderr holds a secret, a token or a panic:\n%s", n.name, log)
		}
	}
}

// session runs operations of one path until the faults are over and a
// few more after: each operation is retried (a new attempt) until it
// completes, up to a deadline well after the faults healed.
func session(ctx context.Context, t *testing.T, tl *tally, rec *recorder, path string, s int, nodes []*node, lbURL string, faultsDone <-chan struct{}) {
	// The errors and losses name the SDK of the session's node (the
	// 2025-11-25 paths) and of the node whose page answers (URL mode); the
	// other requests go to both nodes in turn.
	label := path
	switch path {
	case "form":
		label += " on " + nodes[s%2].sdk
	case "url":
		label += " on " + nodes[s%2].sdk + ", paged on " + nodes[(s+1)%2].sdk
	case "urlmrtr":
		label += " paged on " + nodes[(s+1)%2].sdk
	}
	done := false
	after := 0
	for op := 0; after < 2; op++ {
		select {
		case <-faultsDone:
			done = true
		default:
		}
		if done {
			after++
		}
		ok := false
		deadline := time.Now().Add(45 * time.Second)
		for attempt := 0; !ok && time.Now().Before(deadline) && ctx.Err() == nil; attempt++ {
			run := fmt.Sprintf("%s-%d-%d-%d", path, s, op, attempt)
			err := attemptOp(ctx, rec, path, s, run, nodes, lbURL)
			if err == nil {
				ok = true
				tl.roundTrips.Add(1)
				break
			}
			tl.err(label, err)
			time.Sleep(retryPause(attempt))
		}
		if !ok {
			tl.lost.Add(1)
			t.Errorf("%s session %d operation %d never completed", label, s, op)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// attemptOp runs one attempt on a fresh connection. rec, when not nil,
// records what a replay needs.
func attemptOp(ctx context.Context, rec *recorder, path string, s int, run string, nodes []*node, lbURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	endpoint, version := lbURL+"/mcp", "2026-07-28"
	n := nodes[s%2]
	if path == "form" || path == "url" {
		endpoint, version = n.base()+"/mcp", "2025-11-25"
	}
	other := nodes[(s+1)%2]
	opts := &mcp.ClientOptions{}
	var visitErr atomic.Value // error
	switch path {
	case "form", "mrtr":
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}
	case "url", "urlmrtr":
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// The browser opens the link on the other node, and opens it
			// again while the page says to retry.
			go func() {
				if err := visit(rec, req.Params.URL, other.base()); err != nil {
					visitErr.Store(err)
				}
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "faults", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: path != "url", HTTPClient: rec.client()}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	args := map[string]any{"run": run}
	if path == "url" || path == "urlmrtr" {
		args["mode"] = "url"
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fault_probe", Arguments: args})
	if err != nil {
		return err
	}
	if path == "llm" {
		if res.IsError {
			return errors.New(fronttest.Text(res))
		}
		id, ok := pendingID(res)
		if !ok {
			return fmt.Errorf("no pending elicitation: %s", fronttest.Text(res))
		}
		// The same answer, resent while it fails (a reply lost to a
		// fault), for about 12s: it must complete once.
		answer := map[string]any{"elicitId": id, "action": "accept", "content": map[string]any{"confirm": true}}
		var last error
		for attempt := range 60 {
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sendElicitationResult", Arguments: answer})
			switch {
			case err != nil:
				last = err
			case res.IsError:
				last = errors.New(fronttest.Text(res))
				if !strings.Contains(fronttest.Text(res), "being processed") && !strings.Contains(fronttest.Text(res), "store") {
					return last
				}
			default:
				last = nil
			}
			if last == nil {
				break
			}
			time.Sleep(retryPause(attempt))
		}
		if last != nil {
			return last
		}
	}
	if res.IsError {
		if err, _ := visitErr.Load().(error); err != nil {
			return fmt.Errorf("%s (browser: %v)", fronttest.Text(res), err)
		}
		return errors.New(fronttest.Text(res))
	}
	if got := fronttest.Text(res); got != "ran "+run {
		return fmt.Errorf("unexpected result %q", got)
	}
	return nil
}

// visit answers the consent page of a link on base's node (Accept), again
// while it answers 409 or 5xx (the page says to try again), as a user
// would.
func visit(rec *recorder, link, base string) error {
	answered, err := pages.Accept(link, base, 53, 200*time.Millisecond) // about 10.5s
	if err == nil {
		rec.callback(answered)
	}
	return err
}

func pendingID(res *mcp.CallToolResult) (string, bool) {
	p, ok := res.Meta["elicitationPending"].(map[string]any)
	if !ok {
		return "", false
	}
	id, ok := p["elicitationId"].(string)
	return id, ok && id != ""
}

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store/redis/redistest"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// scaleoutSessionsEnv sets the number of concurrent client sessions of
// TestScaleOut per protocol version (default 12, which fits CI; the full
// size is ELICITVAULT_SCALEOUT_SESSIONS=150, 300 sessions in all).
const scaleoutSessionsEnv = "ELICITVAULT_SCALEOUT_SESSIONS"

// needProgram skips t (fails it under ELICITVAULT_REQUIRE_BACKENDS=1)
// unless prog is installed, and returns its path.
func needProgram(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if _, err := os.Stat(filepath.Join(dir, prog)); err == nil {
				return filepath.Join(dir, prog)
			}
		}
		msg := prog + " is not installed"
		if os.Getenv("ELICITVAULT_REQUIRE_BACKENDS") == "1" {
			t.Fatalf("%s, and ELICITVAULT_REQUIRE_BACKENDS=1", msg)
		}
		t.Skip(msg)
	}
	return p
}

// startProcess starts a program of the test's own, killed when the test
// ends (or the test binary dies).
func startProcess(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd
}

// killableServe is an `elicitvault serve` that the test may SIGKILL.
type killableServe struct {
	*servebin.Proc
	base string
}

func startKillableServe(t *testing.T, args ...string) *killableServe {
	t.Helper()
	return startKillableServeBin(t, servebin.Path(t), args...)
}

// startKillableServeBin starts `bin serve` on a port of its own; when the
// test ends it stops it and checks that its stderr holds no secret or
// token.
func startKillableServeBin(t *testing.T, bin string, args ...string) *killableServe {
	t.Helper()
	// The listening line names --base-url, the balancer: the node's own
	// address is chosen here.
	addr := fmt.Sprintf("127.0.0.1:%d", storetest.FreePort(t))
	// Every client of these tests comes from 127.0.0.1 (through
	// HAProxy): one client to the session caps, whose default bound is
	// for one real client.
	p := servebin.Serve(t, bin, []string{"MCP_ELICITATION_SECRET=" + serveSecret, "MCP_ELICITATION_SECRET_PREVIOUS="},
		append([]string{"--addr", addr, "--max-sessions-per-client", "5000"}, args...)...)
	// Behind a balancer (--base-url) the line names the node's own
	// address too.
	if slices.Contains(args, "--base-url") && !strings.HasSuffix(p.Line, "(listening on "+addr+")") {
		t.Errorf("serve's listening line does not name its address %s: %q", addr, p.Line)
	}
	t.Cleanup(func() {
		p.Stop(15 * time.Second)
		if p.Leaks(serveSecret) {
			t.Errorf("serve's stderr holds a secret or a token:\n%s", p.Log())
		}
	})
	return &killableServe{Proc: p, base: "http://" + addr}
}

// startHAProxy balances port front over the nodes round-robin, except
// that a request carrying an Mcp-Session-Id goes to the node that answered
// with it (a 2025-11-25 session lives in one go-sdk process). A dead node
// is taken out after a failed check and its requests sent elsewhere. It
// returns the HAProxy process.
func startHAProxy(t *testing.T, front int, nodes []*killableServe) *exec.Cmd {
	t.Helper()
	bin := needProgram(t, "haproxy")
	var b strings.Builder
	fmt.Fprintf(&b, `global
	maxconn 4096
defaults
	mode http
	timeout connect 2s
	timeout client 60s
	timeout server 60s
	option redispatch
	option http-no-delay
	retries 2
frontend mcp
	bind 127.0.0.1:%d
	default_backend nodes
backend nodes
	balance roundrobin
	stick-table type string len 128 size 100k expire 30m
	stick match req.hdr(mcp-session-id)
	stick store-response res.hdr(mcp-session-id)
`, front)
	for i, n := range nodes {
		fmt.Fprintf(&b, "\tserver node%d %s check inter 500ms fall 1 rise 2\n", i, strings.TrimPrefix(n.base, "http://"))
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := startProcess(t, bin, "-db", "-f", cfg)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", front))
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("haproxy does not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScaleOut runs three `elicitvault serve` nodes behind a real
// HAProxy, on a Redis Cluster (six redis-server processes, WAIT for one
// replica) and on PostgreSQL; two serve through the go-sdk, one through
// the mcp-go front-end (--sdk mcp-go). Concurrent client sessions on both protocol versions, all
// through the balancer, call connect_account in a loop: each is a URL-mode
// elicitation whose consent page and callback the "browser" opens through
// the balancer, so that the answer lands on any node, usually not the one
// holding the session. A third of the way through one node is killed
// (SIGKILL). The test prints the round trips completed, the answers
// accepted by a node whose call then did not complete (lost, must be 0
// for sessions of live nodes), and what the clients of the dead node saw.
func TestScaleOut(t *testing.T) {
	t.Run("redis-cluster", func(t *testing.T) {
		runScaleOut(t, redistest.StartCluster(t).URL("wait_replicas=1&prefix=scaleout:"))
	})
	t.Run("postgres", func(t *testing.T) {
		// serve migrates the schema itself.
		runScaleOut(t, postgresSchemaURL(t, "evscale_"))
	})
}

// postgresSchemaURL returns the URL of the PostgreSQL server of the
// tests, with a schema of its own (named prefix and random letters) that
// is dropped when the test ends.
func postgresSchemaURL(t *testing.T, prefix string) string {
	t.Helper()
	raw := serverURL(t, postgresEnv)
	schema := prefix + randomName()
	t.Cleanup(func() {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, raw)
		if err != nil {
			t.Error(err)
			return
		}
		defer pool.Close()
		dropSchema(t, pool, schema)
	})
	return withQuery(t, raw, "schema", schema)
}

func runScaleOut(t *testing.T, storeURL string) {
	sessions := 12
	if v, err := strconv.Atoi(os.Getenv(scaleoutSessionsEnv)); err == nil && v > 0 {
		sessions = v
	}
	const rounds = 3
	front := storetest.FreePort(t)
	frontURL := fmt.Sprintf("http://127.0.0.1:%d", front)
	// The nodes' fault_probe tool appends the attempt's identifier to this
	// log each time it continues after an accepted answer: an identifier
	// logged twice is a tool continued twice.
	runLog := filepath.Join(t.TempDir(), "runs.log")
	t.Setenv("ELICITVAULT_FAULT_PROBE_LOG", runLog)
	// One deployment of both SDKs: nodes 0 and 1 serve through the
	// go-sdk, node 2 through the mcp-go front-end; node 1 is the one
	// killed, so that both SDKs serve before and after the kill.
	var nodes []*killableServe
	for _, sdk := range []string{"go-sdk", "go-sdk", "mcp-go"} {
		nodes = append(nodes, startKillableServe(t, "--sdk", sdk, "--store", storeURL, "--base-url", frontURL))
	}
	startHAProxy(t, front, nodes)

	type tally struct {
		ok, failed, answeredLost atomic.Int64
		errs                     sync.Map // error text → count
	}
	var before, after tally
	var killed atomic.Bool
	var continued, connected atomic.Int64
	var latMu sync.Mutex
	var latencies []time.Duration // of the round trips that completed
	var completed atomic.Int64
	killAt := int64(sessions * 2 * rounds / 3)
	killNow := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for s := range 2 * sessions {
		version := "2025-11-25"
		if s%2 == 1 {
			version = "2026-07-28"
		}
		wg.Go(func() {
			c := newGoClient(t)
			client := mcp.NewClient(&mcp.Implementation{Name: "scaleout", Version: "1"}, c.options())
			ctx := t.Context()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: frontURL + "/mcp"},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				if !killed.Load() {
					t.Errorf("connect: %v", err)
					return
				}
				// Initialized on the node that then died.
				after.failed.Add(1)
				v, _ := after.errs.LoadOrStore(version+": connect: session lost with its node", new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
				return
			}
			defer cs.Close()
			connected.Add(1)
			for round := range rounds {
				var callback atomic.Int32
				c.setVisit(func(u string) {
					callback.Store(int32(browseRetry(u)))
				})
				c.answer(&mcp.ElicitResult{Action: "accept"})
				wasKilled := killed.Load()
				t0 := time.Now()
				run := fmt.Sprintf("%s/%d/%d", version, s, round)
				out, isErr, err := callText(ctx, cs, "fault_probe", map[string]any{"run": run, "mode": "url"})
				tl := &before
				if wasKilled || killed.Load() {
					tl = &after
				}
				if err != nil && version == "2026-07-28" && killed.Load() {
					// A 2026-07-28 call keeps no state in the node: the
					// client calls again, and the balancer sends it to
					// a live node.
					c.answer(&mcp.ElicitResult{Action: "accept"})
					run += "/again"
					out, isErr, err = callText(ctx, cs, "fault_probe", map[string]any{"run": run, "mode": "url"})
					if err == nil && !isErr {
						continued.Add(1)
					}
				}
				if err == nil && !isErr && out == "ran "+run {
					latMu.Lock()
					latencies = append(latencies, time.Since(t0))
					latMu.Unlock()
					tl.ok.Add(1)
					if completed.Add(1) >= killAt && connected.Load() == int64(2*sessions) {
						once.Do(func() { close(killNow) })
					}
					continue
				}
				tl.failed.Add(1)
				if callback.Load() == 200 && ctx.Err() == nil && strings.Contains(fmt.Sprint(err), "deadline") {
					// The answer was accepted by a node and the call,
					// on a live node, never saw it.
					tl.answeredLost.Add(1)
				}
				msg := fmt.Sprint(err)
				if err == nil {
					msg = "tool error: " + out
				}
				if strings.Contains(msg, "deadline") {
					msg += fmt.Sprintf(" (callback status %d)", callback.Load())
				}
				msg = version + ": " + regexp.MustCompile(`"http://[^"]*"`).ReplaceAllString(msg, "…")
				msg = regexp.MustCompile(`session ID: [^)]*`).ReplaceAllString(msg, "session ID: …")
				if len(msg) > 160 {
					msg = msg[:160]
				}
				v, _ := tl.errs.LoadOrStore(msg, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
				return // a failed session stops: its client would reconnect
			}
		})
	}
	var deadBase string
	select {
	case <-killNow:
		killed.Store(true)
		deadBase = nodes[1].base
		nodes[1].Cmd.Process.Kill()
		t.Logf("node %s killed (SIGKILL) after %d round trips, %v in", deadBase, completed.Load(), time.Since(start).Round(time.Millisecond))
	case <-time.After(90 * time.Second):
		for i, n := range nodes {
			t.Logf("node %d log:\n%s", i, n.Log())
		}
		t.Fatal("the load did not reach the kill point in 90s")
	}
	wg.Wait()
	elapsed := time.Since(start)
	if t.Failed() {
		for i, n := range nodes {
			t.Logf("node %d log:\n%s", i, n.Log())
		}
	}
	report := func(name string, tl *tally) {
		var errs []string
		tl.errs.Range(func(k, v any) bool {
			errs = append(errs, fmt.Sprintf("%d× %s", v.(*atomic.Int64).Load(), k))
			return true
		})
		sort.Strings(errs)
		t.Logf("%s the kill: %d round trips, %d failed (%d of them after the answer reached a node) %v",
			name, tl.ok.Load(), tl.failed.Load(), tl.answeredLost.Load(), errs)
	}
	t.Logf("%d sessions (%d per protocol version) × %d round trips through HAProxy over 3 nodes, in %v",
		2*sessions, sessions, rounds, elapsed.Round(time.Millisecond))
	slices.Sort(latencies)
	if n := len(latencies); n > 0 {
		t.Logf("round trip latency (consent page and callback included): p50 %v, p99 %v, max %v",
			latencies[n/2].Round(time.Millisecond), latencies[n*99/100].Round(time.Millisecond), latencies[n-1].Round(time.Millisecond))
	}
	report("before", &before)
	report("after", &after)
	t.Logf("2026-07-28 calls that failed on the dead node and completed when called again: %d", continued.Load())
	runs := map[string]int{}
	if b, err := os.ReadFile(runLog); err == nil {
		for line := range strings.Lines(string(b)) {
			runs[strings.TrimSuffix(line, "\n")]++
		}
	}
	twice := 0
	for run, n := range runs {
		if n > 1 {
			twice++
			t.Errorf("the tool continued %d times after the one answer of %s", n, run)
		}
	}
	if ok := before.ok.Load() + after.ok.Load(); int64(len(runs)) < ok {
		t.Errorf("%d round trips completed but only %d tool continuations logged", ok, len(runs))
	}
	t.Logf("tool continuations: %d logged, %d duplicated", len(runs), twice)
	if before.failed.Load() != 0 {
		t.Errorf("%d round trips failed before any node was killed", before.failed.Load())
	}
	if n := before.answeredLost.Load() + after.answeredLost.Load(); n != 0 {
		t.Errorf("%d answers accepted by a node never reached their call", n)
	}
	// A session pinned to the dead node fails; every other one completes.
	if f := after.failed.Load(); f > int64(2*sessions)*2/3 {
		t.Errorf("%d sessions failed after the kill, of %d", f, 2*sessions)
	}
}

// browseRetry opens a consent page and posts its form, as a browser
// would, through the balancer; a failed attempt (the node died under it:
// no page, or a 5xx answer to the form; or a 409, try again) is retried,
// as a user reloads the page. It returns the callback's status, 0 if
// none.
func browseRetry(u string) int {
	const pause = 150 * time.Millisecond
	for range 8 {
		resp, err := http.Get(u)
		if err != nil {
			time.Sleep(pause)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			time.Sleep(pause)
			continue
		}
		target, _ := url.Parse(u)
		target, err = target.Parse(strings.ReplaceAll(string(m[1]), "&amp;", "&"))
		if err != nil {
			return 0
		}
		resp, err = http.Post(target.String(), "application/x-www-form-urlencoded", nil)
		if err != nil {
			time.Sleep(pause)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusConflict {
			// The node died under the answer (HAProxy's 502), or the
			// page says to try again (409): the user reloads the page
			// and answers again, as integration/faults' visit does.
			time.Sleep(pause)
			continue
		}
		return resp.StatusCode
	}
	return 0
}

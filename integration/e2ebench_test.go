package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The environment of TestE2EBench, a measurement that runs only when
// ELICITVAULT_E2EBENCH=1 (scripts/e2ebench sets it); it is not part of
// scripts/test.
const (
	e2eBenchEnv        = "ELICITVAULT_E2EBENCH"
	e2eBenchSecondsEnv = "ELICITVAULT_E2EBENCH_SECONDS"  // per measurement, default 4
	e2eBenchPairsEnv   = "ELICITVAULT_E2EBENCH_PAIRS"    // interleaved pairs per cell, default 5
	e2eBenchStoresEnv  = "ELICITVAULT_E2EBENCH_STORES"   // comma-separated subset of memory,redis,postgres
	e2eBenchVersionEnv = "ELICITVAULT_E2EBENCH_VERSION"  // one protocol version instead of both
	e2eBenchSessEnv    = "ELICITVAULT_E2EBENCH_SESSIONS" // one session count (1 or 16, or another) instead of both
	e2eBenchSDKEnv     = "ELICITVAULT_E2EBENCH_SDK"      // serve's SDK (--sdk): go-sdk (default) or mcp-go
	e2eBenchBareEnv    = "ELICITVAULT_E2EBENCH_BARE"     // the baseline's SDK: serve's (default), go-sdk or mcp-go
	e2eBenchBeforeEnv  = "ELICITVAULT_E2EBENCH_BEFORE"   // an earlier elicitvault binary as the baseline, instead of a bare server
	e2eBenchEVEnv      = "ELICITVAULT_E2EBENCH_EV"       // "lib": internal/evlib (elicit on the go-sdk alone, memory store) in serve's place
)

// bareServers are the baselines by SDK: the binary bareServerBin builds.
var bareServers = map[string]string{"go-sdk": "bare", "mcp-go": "baremcpgo"}

var (
	bareOnce sync.Once
	bareDir  string
	bareErr  error
)

// bareServerBin builds the baseline servers once and returns the path of
// one: "bare" (internal/bare, on the go-sdk), "baremcpgo"
// (internal/baremcpgo, on mark3labs/mcp-go), "evlib" (internal/evlib,
// elicitvault's library without serve's binary) or "evlibmcpgo"
// (internal/evlibmcpgo, baremcpgo's tool on the mcp-go front-end).
func bareServerBin(t *testing.T, name string) string {
	t.Helper()
	bareOnce.Do(func() {
		dir, err := os.MkdirTemp("", "elicitvault-bare-")
		if err != nil {
			bareErr = err
			return
		}
		bareDir = dir
		pkgs := []string{"./internal/bare", "./internal/baremcpgo", "./internal/evlib", "./internal/evlibmcpgo"}
		out, err := exec.Command("go", append([]string{"build", "-o", dir}, pkgs...)...).CombinedOutput()
		if err != nil {
			bareErr = fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
		}
	})
	if bareErr != nil {
		t.Fatal(bareErr)
	}
	return filepath.Join(bareDir, name)
}

var bareListenRE = regexp.MustCompile(`^(?:bare|evlib): MCP at (http://\S+)/mcp$`)

// startBare starts the server name of bareServerBin, with env added to
// the test's environment, and returns its MCP endpoint and process ID; it
// is killed when the test ends.
func startBare(t *testing.T, name string, env ...string) (endpoint string, pid int) {
	t.Helper()
	cmd := exec.Command(bareServerBin(t, name), "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := bareListenRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1] + "/mcp"
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case ep := <-found:
		return ep, cmd.Process.Pid
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start listening", name)
	}
	return "", 0
}

// e2eCell is one cell of TestE2EBench's table: the medians over the
// interleaved pairs of elicitvault's figure divided by the bare server's.
type e2eCell struct {
	store, version      string
	sessions            int
	cpu, tput, p50, p99 float64
	bare, ev            []*loadResult
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestE2EBench measures what a user pays for elicitvault end to end: the
// same tool (delete_contacts, a confirmation that the client accepts at
// once), the same go-sdk clients over Streamable HTTP and the same routing
// by protocol version, against `elicitvault serve` and against a bare
// go-sdk server (internal/bare: ServerSession.Elicit before 2026-07-28,
// an input-required result with a plain requestState on 2026-07-28), or,
// with ELICITVAULT_E2EBENCH_BARE=mcp-go, its mcp-go twin
// (internal/baremcpgo), the baseline of the mcp-go front-end. With
// ELICITVAULT_E2EBENCH_SDK=mcp-go elicitvault's side is `serve --sdk
// mcp-go` and the baseline bare mcp-go (unless _BARE says otherwise); with
// ELICITVAULT_E2EBENCH_EV=lib it is internal/evlib, the same tool on
// elicitvault's library alone (memory store), without the rest of serve's
// binary, whose static heap the GC marks on every cycle, or with
// ELICITVAULT_E2EBENCH_SDK=mcp-go internal/evlibmcpgo, baremcpgo's tool,
// declared the same way, on the mcp-go front-end. For
// each store (memory, Redis, PostgreSQL), protocol generation and 1 and
// 16 sessions it runs pairs of measurements, alternating which server
// goes first, and prints the medians of the ratios elicitvault ÷ bare of
// server CPU per round trip (from /proc), throughput, p50 and p99. It is
// a measurement, not a test of CI: it runs only with
// ELICITVAULT_E2EBENCH=1 (scripts/e2ebench), and the bounds of the
// performance issue are printed beside the figures, never failed on.
func TestE2EBench(t *testing.T) {
	if os.Getenv(e2eBenchEnv) != "1" {
		t.Skip("a measurement: set " + e2eBenchEnv + "=1 (scripts/e2ebench)")
	}
	spec := loadSpec{
		d:             time.Duration(envInt(e2eBenchSecondsEnv, 4)) * time.Second,
		maxRoundTrips: 1 << 40,
	}
	pairs := envInt(e2eBenchPairsEnv, 5)
	evSDK := os.Getenv(e2eBenchSDKEnv)
	if evSDK == "" {
		evSDK = "go-sdk"
	}
	if _, ok := bareServers[evSDK]; !ok {
		t.Fatalf("%s: unknown SDK %q (go-sdk or mcp-go)", e2eBenchSDKEnv, evSDK)
	}
	sdk := os.Getenv(e2eBenchBareEnv)
	if sdk == "" {
		sdk = evSDK
	}
	bareName, ok := bareServers[sdk]
	if !ok {
		t.Fatalf("%s: unknown SDK %q (go-sdk or mcp-go)", e2eBenchBareEnv, sdk)
	}
	lib := false
	switch v := os.Getenv(e2eBenchEVEnv); v {
	case "":
	case "lib":
		lib = true
	default:
		t.Fatalf("%s: unknown %q (lib)", e2eBenchEVEnv, v)
	}
	stores := []string{"memory", "redis", "postgres"}
	if v := os.Getenv(e2eBenchStoresEnv); v != "" {
		stores = strings.Split(v, ",")
	}
	storeURL := map[string]func(t *testing.T) string{
		"memory":   func(*testing.T) string { return "memory" },
		"redis":    func(t *testing.T) string { return redisStoreURL(t, "e2e") },
		"postgres": func(t *testing.T) string { return postgresSchemaURL(t, "eve2e_") },
	}
	var cells []*e2eCell
	for _, st := range stores {
		open, ok := storeURL[st]
		if !ok {
			t.Fatalf("%s: unknown store %q", e2eBenchStoresEnv, st)
		}
		t.Run(st, func(t *testing.T) {
			var evEndpoint string
			var evPID int
			if lib {
				if st != "memory" {
					t.Skipf("%s=lib runs on the memory store only", e2eBenchEVEnv)
				}
				name := "evlib"
				if evSDK == "mcp-go" {
					name = "evlibmcpgo"
				}
				evEndpoint, evPID = startBare(t, name, "MCP_ELICITATION_SECRET="+serveSecret)
			} else {
				ev := startKillableServe(t, "--sdk", evSDK, "--store", open(t))
				evEndpoint, evPID = ev.base+"/mcp", ev.Cmd.Process.Pid
			}
			var bare string
			var barePID int
			if before := os.Getenv(e2eBenchBeforeEnv); before != "" {
				// The same serve, built from an earlier commit: the ratio
				// says what a change costs.
				args := []string{"--store", open(t)}
				if evSDK != "go-sdk" { // builds before the mcp-go front-end have no --sdk
					args = append(args, "--sdk", evSDK)
				}
				b := startKillableServeBin(t, before, args...)
				bare, barePID = b.base+"/mcp", b.Cmd.Process.Pid
			} else {
				bare, barePID = startBare(t, bareName)
			}
			versions := []string{"2025-11-25", "2026-07-28"}
			if v := os.Getenv(e2eBenchVersionEnv); v != "" {
				versions = []string{v}
			}
			sessionCounts := []int{1, 16}
			if n := envInt(e2eBenchSessEnv, 0); n > 0 {
				sessionCounts = []int{n}
			}
			for _, version := range versions {
				for _, sessions := range sessionCounts {
					c := &e2eCell{store: st, version: version, sessions: sessions}
					s := spec
					s.sessions = sessions
					var cpu, tput, p50, p99 []float64
					for i := range pairs {
						name := fmt.Sprintf("%s %s %d", st, version, sessions)
						var b, e *loadResult
						// Alternate which goes first, so that neither always
						// meets the other's leftovers (GC, connections).
						if i%2 == 0 {
							b = runLoadSpec(t, name+" bare", version, bare, []int{barePID}, 0, s)
							e = runLoadSpec(t, name+" elicitvault", version, evEndpoint, []int{evPID}, 0, s)
						} else {
							e = runLoadSpec(t, name+" elicitvault", version, evEndpoint, []int{evPID}, 0, s)
							b = runLoadSpec(t, name+" bare", version, bare, []int{barePID}, 0, s)
						}
						c.bare, c.ev = append(c.bare, b), append(c.ev, e)
						cpu = append(cpu, float64(e.cpuPerRoundTrip())/float64(b.cpuPerRoundTrip()))
						tput = append(tput, e.throughput()/b.throughput())
						p50 = append(p50, float64(e.p50)/float64(b.p50))
						p99 = append(p99, float64(e.p99)/float64(b.p99))
					}
					c.cpu, c.tput, c.p50, c.p99 = median(cpu), median(tput), median(p50), median(p99)
					cells = append(cells, c)
				}
			}
		})
	}

	var b strings.Builder
	baseline := "bare " + sdk + " server"
	if before := os.Getenv(e2eBenchBeforeEnv); before != "" {
		baseline = "the earlier build " + before + " (bounds below are for a bare server)"
	}
	evName := "elicitvault serve --sdk " + evSDK
	if lib {
		evName = "elicitvault's library alone (internal/evlib)"
		if evSDK == "mcp-go" {
			evName = "the mcp-go front-end alone, on the bare server's tool (internal/evlibmcpgo)"
		}
	}
	fmt.Fprintf(&b, "\n%s ÷ %s, delete_contacts accepted at once; medians of %d interleaved pairs of %v; %d cores\n",
		evName, baseline, pairs, spec.d, runtime.NumCPU())
	fmt.Fprintf(&b, "%-10s %-11s %8s %14s %12s %10s %10s   %s\n", "store", "protocol", "sessions", "CPU/trip", "throughput", "p50", "p99", "bare: CPU/trip, trips/s, p50 (median)")
	for _, c := range cells {
		cpuBound, tputBound, p50Bound := 1.4, 0.75, 2.0
		if c.store == "memory" {
			cpuBound, tputBound, p50Bound = 1.15, 0.9, 1.2
			if evSDK == "mcp-go" {
				cpuBound = 1.2 // issue 19's bound for the mcp-go front-end
			}
		}
		mark := func(v, bound float64, under bool) string {
			if (under && v > bound) || (!under && v < bound) {
				return "!"
			}
			return " "
		}
		cpuMark, tputMark, p50Mark := " ", " ", " "
		if c.sessions == 16 {
			cpuMark, tputMark = mark(c.cpu, cpuBound, true), mark(c.tput, tputBound, false)
		} else {
			p50Mark = mark(c.p50, p50Bound, true)
		}
		var bc, bt, bp []float64
		for _, r := range c.bare {
			bc = append(bc, float64(r.cpuPerRoundTrip()))
			bt = append(bt, r.throughput())
			bp = append(bp, float64(r.p50))
		}
		fmt.Fprintf(&b, "%-10s %-11s %8d %13.2f%s %11.2f%s %9.2f%s %10.2f   %v, %.0f/s, %v\n",
			c.store, c.version, c.sessions,
			c.cpu, cpuMark, c.tput, tputMark, c.p50, p50Mark, c.p99,
			time.Duration(median(bc)).Round(time.Microsecond), median(bt), time.Duration(median(bp)).Round(10*time.Microsecond))
	}
	fmt.Fprintf(&b, "! marks a figure over the performance issue's bound (16 sessions: CPU ≤ 1.15 memory (1.2 on mcp-go, issue 19) / 1.4 Redis, PostgreSQL; throughput ≥ 0.9 / 0.75; 1 session: p50 ≤ 1.2 / 2)\n")
	t.Log(b.String())
}

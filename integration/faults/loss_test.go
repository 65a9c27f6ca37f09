package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStoreLoss drives the two incidents of issue 24, at a small size in
// CI and at full size in scripts/faults: go-sdk clients run every path on
// both protocol generations against two nodes while the store restarts,
//
//   - redis-volatile: a Redis without persistence, which comes back empty
//     (a cache setting, or a failover that lost writes): the one-shot
//     markers are gone;
//   - postgres: a PostgreSQL restart, durable, during the same load (the
//     2026-07-28 URL-mode path among it);
//   - redis-cluster: a Redis Cluster with wait_replicas=1 whose primary of
//     the epoch's shard is killed (SIGKILL) under the same load: its
//     replica is promoted, and the killed node comes back as a replica;
//
// then it replays every requestState a client sent and every consent-page
// answer a browser gave, to both nodes, as an attacker holding them would.
// Must hold: no operation lost (every failed answer is sent again by its
// client until it completes), no replay accepted, no attempt run twice.
func TestStoreLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite runs processes for tens of seconds")
	}
	sessions := envInt("ELICITVAULT_FAULTS_SESSIONS", 2) // per path
	for _, kind := range []string{"redis-volatile", "postgres", "redis-cluster"} {
		t.Run(kind, func(t *testing.T) {
			var b backend
			switch kind {
			case "redis-volatile":
				b = startVolatileRedis(t)
			case "postgres":
				b = startPostgres(t)
			default:
				b = startFailoverCluster(t)
			}
			runLoss(t, b, sessions)
		})
	}
}

// recorder keeps what a replay needs: every POST to /mcp that carried a
// requestState, and every consent-page link a browser answered. Its
// methods do nothing on a nil recorder.
type recorder struct {
	mu        sync.Mutex
	states    []recordedPost
	callbacks []recordedCallback
	restarted time.Time // when the store came back
}

type recordedCallback struct {
	link string
	at   time.Time // when the page said Done
}

type recordedPost struct {
	url    string
	header http.Header
	body   []byte
}

func (r *recorder) client() *http.Client {
	if r == nil {
		return nil
	}
	return &http.Client{Transport: recordingTransport{r}}
}

func (r *recorder) callback(link string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.callbacks = append(r.callbacks, recordedCallback{link, time.Now()})
	r.mu.Unlock()
}

type recordingTransport struct{ r *recorder }

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"requestState"`)) {
			t.r.mu.Lock()
			t.r.states = append(t.r.states, recordedPost{req.URL.String(), req.Header.Clone(), body})
			t.r.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// checkRuns reads the probe's log, reports each attempt that ran more
// than once, and returns the runs and how many ran twice.
func checkRuns(t *testing.T, logPath string) (map[string]int, int) {
	runs := readRuns(logPath)
	twice := 0
	for id, n := range runs {
		if n > 1 {
			twice++
			t.Errorf("attempt %s ran %d times", id, n)
		}
	}
	return runs, twice
}

// kinds returns the kinds of error the clients saw, sorted.
func (t *tally) kinds() []string {
	kinds := make([]string, 0, len(t.errs))
	for k := range t.errs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// lines writes one line per kind of error, with its count.
func (t *tally) lines(kinds []string) string {
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "  error seen %4d× %s\n", t.errs[k], k)
	}
	return b.String()
}

// readRuns returns how many times each attempt ran, from the probe's log.
func readRuns(logPath string) map[string]int {
	runs := map[string]int{}
	if f, err := os.Open(logPath); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			runs[sc.Text()]++
		}
		f.Close()
	}
	return runs
}

func runLoss(t *testing.T, b backend, sessions int) {
	logPath, nodes, lbURL, _, _ := twoNodes(t, b)
	rec := &recorder{}
	tl := &tally{errs: make(map[string]int)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		// The restart comes when every session has completed five
		// operations on average (there is something to replay), and the
		// fault is over when every session has completed one after it.
		if !tl.waitRoundTrips(ctx, int64(5*len(paths)*sessions)) {
			return
		}
		t.Logf("fault: store restart")
		b.restart(t)
		rec.mu.Lock()
		rec.restarted = time.Now()
		rec.mu.Unlock()
		tl.waitRoundTrips(ctx, int64(len(paths)*sessions))
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for _, path := range paths {
		for s := range sessions {
			wg.Go(func() { session(ctx, t, tl, rec, path, s, nodes, lbURL, faultsDone) })
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	// The replays, to both nodes, once every operation completed.
	before := readRuns(logPath)
	var acceptedStates, acceptedCallbacks atomic.Int64
	jobs := make(chan func())
	var workers sync.WaitGroup
	for range 8 {
		workers.Go(func() {
			for job := range jobs {
				job()
			}
		})
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, p := range rec.states {
		for _, n := range nodes {
			jobs <- func() {
				req, err := http.NewRequest(http.MethodPost, n.base()+"/mcp", bytes.NewReader(p.body))
				if err != nil {
					return
				}
				req.Header = p.header.Clone()
				resp, err := hc.Do(req)
				if err != nil {
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if i := bytes.Index(body, []byte(`"text":"ran `)); i >= 0 {
					run, _, _ := strings.Cut(string(body[i+len(`"text":"ran `):]), `"`)
					if before[run] > 0 {
						acceptedStates.Add(1)
						t.Errorf("a replayed requestState ran attempt %s again", run)
					}
				}
			}
		}
	}
	for _, cb := range rec.callbacks {
		for _, n := range nodes {
			jobs <- func() {
				if err := visitOnce(hc, cb.link, n.base()); err == nil {
					acceptedCallbacks.Add(1)
					t.Errorf("a replayed consent-page answer was taken by node %s (the page said Done; first answered %v after the store came back)",
						n.name, cb.at.Sub(rec.restarted).Round(time.Millisecond))
				}
			}
		}
	}
	close(jobs)
	workers.Wait()

	runs, twice := checkRuns(t, logPath)
	kinds := tl.kinds()
	var report strings.Builder
	fmt.Fprintf(&report, "loss: %d sessions per path × %d paths, %s: round trips %d, lost %d, run twice %d, runs logged %d; replayed %d requestStates (accepted %d) and %d consent answers (accepted %d), to both nodes\n",
		sessions, len(paths), elapsed.Round(time.Second), tl.roundTrips.Load(), tl.lost.Load(), twice, len(runs),
		len(rec.states), acceptedStates.Load(), len(rec.callbacks), acceptedCallbacks.Load())
	report.WriteString(tl.lines(kinds))
	t.Log(report.String())
	fmt.Print(report.String())
	if tl.lost.Load() != 0 {
		t.Errorf("%d operations lost", tl.lost.Load())
	}
	if len(rec.states) == 0 || len(rec.callbacks) == 0 {
		t.Error("nothing recorded to replay")
	}
	for _, n := range nodes {
		if log := n.log(); strings.Contains(log, secretOld) || strings.Contains(log, secretNew) || strings.Contains(log, "ev1.") || strings.Contains(log, "ev2.") || strings.Contains(log, "panic") {
			t.Errorf("node %s's stderr holds a secret, a token or a panic:\n%s", n.name, log)
		}
	}
}

// visitOnce posts Accept to the consent page of link on base's node once;
// nil means the page took it.
func visitOnce(hc *http.Client, link, base string) error {
	req, err := http.NewRequest(http.MethodPost, strings.Replace(link, hostOf(link), hostOf(base), 1), strings.NewReader("action=accept"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("callback %d", resp.StatusCode)
	}
	return nil
}

func hostOf(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

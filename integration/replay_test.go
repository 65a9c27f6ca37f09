package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/redis"
)

// The environment of the tests, and of the child process.
const (
	redisEnv    = "ELICITVAULT_REDIS_URL"
	postgresEnv = "ELICITVAULT_POSTGRES_URL"
	requireEnv  = "ELICITVAULT_REQUIRE_BACKENDS"

	// roleEnv marks the child process; the others pass it what to do.
	roleEnv    = "ELICITVAULT_INTEGRATION_ROLE"
	backendEnv = "ELICITVAULT_INTEGRATION_BACKEND"
	urlEnv     = "ELICITVAULT_INTEGRATION_STORE_URL"
	nsEnv      = "ELICITVAULT_INTEGRATION_NAMESPACE" // Redis prefix or PostgreSQL schema
	tokenEnv   = "ELICITVAULT_INTEGRATION_TOKEN"
)

// perProcess consumers run in each of the two processes: 1,000 in all.
const perProcess = 500

// The parent issues under A; the child runs with B as its primary and A as
// previous, as a node already promoted in a rotation would. They must agree
// on the one-shot marker all the same.
const (
	secretA = "integration secret A: 32 bytes or more, fixed"
	secretB = "integration secret B: 32 bytes or more, fixed"
)

func serverURL(t *testing.T, env string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s is not set, and %s=1 requires the backend", env, requireEnv)
		}
		t.Skipf("%s is not set: set it to a server's URL (redis://127.0.0.1:6379/0, "+
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run this test", env)
	}
	return u
}

func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openStore opens the backend's store in namespace ns.
func openStore(ctx context.Context, backend, url, ns string) (store.Store, error) {
	switch backend {
	case "redis":
		return redis.New(ctx, url, &redis.Options{Prefix: ns})
	case "postgres":
		return postgres.New(ctx, url, &postgres.Options{Schema: ns, Logger: slog.New(slog.DiscardHandler)})
	}
	return nil, fmt.Errorf("unknown backend %q", backend)
}

// consumed is what consumeAll counted.
type consumed struct {
	wins, replays int
	err           error
}

// consumeLater runs consumeAll in the background; its counts come on the
// channel it returns.
func consumeLater(svc *token.Service, tok string, n int, start <-chan struct{}) <-chan consumed {
	done := make(chan consumed, 1)
	go func() {
		w, r, err := consumeAll(svc, tok, n, start)
		done <- consumed{w, r, err}
	}()
	return done
}

// consumeAll runs n goroutines that consume tok at once, after start is
// closed, and counts the outcomes.
func consumeAll(svc *token.Service, tok string, n int, start <-chan struct{}) (wins, replays int, err error) {
	var w, r atomic.Int32
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range n {
		wg.Go(func() {
			<-start
			_, err := svc.Consume(ctx, tok, token.Expect{Kind: token.URL, SessionID: "sess-1", Subject: "user-1"})
			switch {
			case err == nil:
				w.Add(1)
			case errors.Is(err, token.ErrReplayed):
				r.Add(1)
			default:
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return int(w.Load()), int(r.Load()), first
}

// TestConsumeChild is the child process's side of TestConsumeAcrossProcesses:
// it does nothing unless ELICITVAULT_INTEGRATION_ROLE=consumer. It prints
// READY, waits for a line on stdin, runs its consumers and prints
// "RESULT <successes> <replays>".
func TestConsumeChild(t *testing.T) {
	if os.Getenv(roleEnv) != "consumer" {
		t.Skip("runs only as the child process of TestConsumeAcrossProcesses")
	}
	ctx := context.Background()
	k, err := ring.New([]byte(secretB), [][]byte{[]byte(secretA)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, os.Getenv(backendEnv), os.Getenv(urlEnv), os.Getenv(nsEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := token.NewService(k, st)
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	done := consumeLater(svc, os.Getenv(tokenEnv), perProcess, start)
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	close(start)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	fmt.Printf("RESULT %d %d\n", res.wins, res.replays)
}

// TestConsumeAcrossProcesses: 1,000 concurrent consumers of one token, 500
// in this process and 500 in a child process (this test binary run again),
// sharing a Redis or PostgreSQL store: exactly one succeeds, the 999 others
// get ErrReplayed. For both token formats.
func TestConsumeAcrossProcesses(t *testing.T) {
	if os.Getenv(roleEnv) != "" {
		t.Skip("child process")
	}
	for _, backend := range []string{"redis", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			env := redisEnv
			if backend == "postgres" {
				env = postgresEnv
			}
			url := serverURL(t, env)
			ctx := context.Background()
			ns := "evinteg-" + randomName() + ":"
			if backend == "postgres" {
				ns, _ = migratedSchema(t, url, "evinteg_")
			}
			st, err := openStore(ctx, backend, url, ns)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if backend == "redis" {
				defer fronttest.Empty(t, st)
			}
			k, err := ring.New([]byte(secretA), nil)
			if err != nil {
				t.Fatal(err)
			}
			svc, err := token.NewService(k, st)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []token.Format{token.Compact, token.JWE} {
				t.Run(format.String(), func(t *testing.T) {
					c := &token.Claims{Kind: token.URL, SessionID: "sess-1", Subject: "user-1", ElicitationID: "elic-1"}
					tok, err := svc.Issue(c, time.Minute, format)
					if err != nil {
						t.Fatal(err)
					}
					wins, replays := runBoth(t, svc, tok, backend, url, ns)
					if wins != 1 || replays != 2*perProcess-1 {
						t.Fatalf("%d successes and %d replays across two processes, want 1 and %d", wins, replays, 2*perProcess-1)
					}
				})
			}
		})
	}
}

// runBoth starts the child, waits until both sides are ready, releases
// them together and adds up their counts.
func runBoth(t *testing.T, svc *token.Service, tok, backend, url, ns string) (wins, replays int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestConsumeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), roleEnv+"=consumer", backendEnv+"="+backend, urlEnv+"="+url, nsEnv+"="+ns, tokenEnv+"="+tok)
	stdin, stdout, stderr := startPiped(t, cmd)
	lines := bufio.NewScanner(stdout)
	var childOut []string
	waitFor := func(prefix string) string {
		for lines.Scan() {
			childOut = append(childOut, lines.Text())
			if strings.HasPrefix(lines.Text(), prefix) {
				return lines.Text()
			}
		}
		cmd.Wait()
		t.Fatalf("child ended without %s:\n%s\n%s", prefix, strings.Join(childOut, "\n"), stderr.String())
		return ""
	}

	start := make(chan struct{})
	done := consumeLater(svc, tok, perProcess, start)
	waitFor("READY")
	io.WriteString(stdin, "go\n")
	close(start)
	res := <-done
	line := waitFor("RESULT ")
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, strings.Join(childOut, "\n"), stderr.String())
	}
	if res.err != nil {
		t.Fatalf("this process: %v", res.err)
	}
	var cw, cr int
	if _, err := fmt.Sscanf(line, "RESULT %d %d", &cw, &cr); err != nil {
		t.Fatalf("child printed %q", line)
	}
	t.Logf("this process: %d successes, %d replays; child: %d successes, %d replays", res.wins, res.replays, cw, cr)
	return res.wins + cw, res.replays + cr
}

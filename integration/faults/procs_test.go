package faults

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/integration/internal/rediscluster"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const requireEnv = "ELICITVAULT_REQUIRE_BACKENDS"

func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s, and %s=1", msg, requireEnv)
	}
	t.Skip(msg)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitDial(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// backend is a store server of the test's own that it can restart.
type backend interface {
	addr() string
	// url returns the store URL for the server reached at addr (the proxy).
	url(addr string) string
	restart(t *testing.T)
}

// redisServer runs redis-server with an append-only file synced on every
// write, so that a restart keeps what it acknowledged; or, volatile,
// without persistence, so that a restart loses everything (a common cache
// setting, and what a failover to an empty replica amounts to).
type redisServer struct {
	dir      string
	port     int
	volatile bool
	cmd      *exec.Cmd
	done     chan struct{}
}

// startVolatileRedis starts a redis-server without persistence.
func startVolatileRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipOrFail(t, "redis-server is not installed")
	}
	r := &redisServer{dir: t.TempDir(), port: freePort(t), volatile: true}
	r.start(t)
	t.Cleanup(func() { r.stop() })
	return r
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipOrFail(t, "redis-server is not installed")
	}
	r := &redisServer{dir: t.TempDir(), port: freePort(t)}
	r.start(t)
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *redisServer) start(t *testing.T) {
	t.Helper()
	persistence := []string{"--appendonly", "yes", "--appendfsync", "always"}
	if r.volatile {
		persistence = []string{"--appendonly", "no"}
	}
	r.cmd = exec.Command("redis-server", append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--dir", r.dir}, persistence...)...)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(r.cmd, r.done)
	if err := waitDial(r.addr(), 10*time.Second); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
}

func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

func (r *redisServer) addr() string           { return fmt.Sprintf("127.0.0.1:%d", r.port) }
func (r *redisServer) url(addr string) string { return "redis://" + addr + "/0" }
func (r *redisServer) restart(t *testing.T)   { r.stop(); r.start(t) }

// pgServer runs a PostgreSQL cluster of the test's own (as the postgres
// user when the test runs as root).
type pgServer struct {
	bin, data  string
	port       int
	asPostgres bool
	cmd        *exec.Cmd
	done       chan struct{}
}

func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(initdbs) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			initdbs = []string{p}
		}
	}
	if len(initdbs) == 0 {
		skipOrFail(t, "PostgreSQL's server binaries are not installed")
	}
	s := &pgServer{bin: filepath.Dir(initdbs[len(initdbs)-1]), port: freePort(t)}
	parent, err := os.MkdirTemp("", "elicitvault-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	os.Chmod(parent, 0o755)
	s.data = filepath.Join(parent, "data")
	if err := os.Mkdir(s.data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skipOrFail(t, "running as root without a postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.data, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asPostgres = true
	}
	if out, err := s.command("initdb", "-D", s.data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.start(t)
	t.Cleanup(func() { s.stop() })
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, s.url(s.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *pgServer) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (s *pgServer) start(t *testing.T) {
	t.Helper()
	s.cmd = s.command("postgres", "-D", s.data, "-p", strconv.Itoa(s.port), "-k", s.data,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=100")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	// Until it accepts a login: it listens before it is ready.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.url(s.addr()))
		cancel()
		if err == nil {
			c.Close(context.Background())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept a login within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *pgServer) stop() {
	if s.cmd == nil {
		return
	}
	s.command("pg_ctl", "stop", "-D", s.data, "-m", "fast", "-w").Run()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

func (s *pgServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }
func (s *pgServer) url(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}
func (s *pgServer) restart(t *testing.T) { s.stop(); s.start(t) }

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// elicitvaultBin builds ../../cmd/elicitvault once per test process.
func elicitvaultBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "elicitvault-faults-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "elicitvault")
		cmd := exec.Command("go", "build", "-o", binPath, "./elicitvault")
		cmd.Dir = filepath.Join("..", "..", "cmd")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// node is a running `elicitvault serve --sdk sdk`, which the test may
// kill (SIGKILL) and start again on the same port.
type node struct {
	name     string
	sdk      string // go-sdk or mcp-go
	port     int
	storeURL string
	env      []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	stderr strings.Builder
}

var listeningRE = regexp.MustCompile(`serve: MCP at (http://\S+)/mcp`)

func startNode(t *testing.T, name, sdk, storeURL string, env []string) *node {
	t.Helper()
	n := &node{name: name, sdk: sdk, port: freePort(t), storeURL: storeURL, env: env}
	n.start(t)
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) base() string { return fmt.Sprintf("http://127.0.0.1:%d", n.port) }

func (n *node) start(t *testing.T) {
	t.Helper()
	// Every client comes from 127.0.0.1: one client to the session caps,
	// whose default bound is for one real client.
	cmd := exec.Command(elicitvaultBin(t), "serve", "--sdk", n.sdk, "--addr", fmt.Sprintf("127.0.0.1:%d", n.port), "--store", n.storeURL, "--ttl", "60s", "--max-sessions-per-client", "5000")
	cmd.Env = append(os.Environ(), n.env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan struct{})
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			n.mu.Lock()
			n.stderr.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if listeningRE.MatchString(sc.Text()) {
				once.Do(func() { close(found) })
			}
		}
	}()
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-found:
	case <-done:
		t.Fatalf("%s exited before listening:\n%s", n.name, n.log())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s did not listen within 30s:\n%s", n.name, n.log())
	}
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
}

func (n *node) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stderr.String()
}

// kill sends SIGKILL and waits for the process to go.
func (n *node) kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

func (n *node) stop(t *testing.T) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("%s did not stop within 15s of SIGTERM", n.name)
	}
}

// failoverCluster is a Redis Cluster with wait_replicas=1 whose restart is
// a failover: the primary of the shard holding the store's epoch is
// killed, its replica promoted, and the killed node started again, to
// rejoin as the new primary's replica. The nodes reach the cluster
// directly: addr is one of its nodes, and url ignores the proxy (a
// cluster client follows the cluster's own addresses).
type failoverCluster struct {
	c *rediscluster.Cluster
}

const clusterPrefix = "loss:"

func startFailoverCluster(t *testing.T) *failoverCluster {
	t.Helper()
	return &failoverCluster{c: rediscluster.Start(t)}
}

func (f *failoverCluster) addr() string { return f.c.Nodes[0].Addr() }
func (f *failoverCluster) url(string) string {
	return f.c.URL("wait_replicas=1&wait_timeout=2s&prefix=" + clusterPrefix)
}

func (f *failoverCluster) restart(t *testing.T) {
	t.Helper()
	primary, replica := f.c.PrimaryOf(t, clusterPrefix+"{"+epoch.Key+"}")
	primary.Kill(t)
	took := replica.WaitPromoted(t, 30*time.Second)
	primary.Restart(t)
	f.c.WaitOK(t)
	t.Logf("the epoch's primary killed; its replica promoted after %v; the killed node is back as a replica", took.Round(time.Millisecond))
}

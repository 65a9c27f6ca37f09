package faults

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/store/postgres/pgtest"
	"github.com/elicitvault/elicitvault/store/redis/redistest"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// backend is a store server of the test's own that it can restart.
type backend interface {
	addr() string
	// url returns the store URL for the server reached at addr (the proxy).
	url(addr string) string
	restart(t *testing.T)
}

// redisServer is a redis-server of the test's own with an append-only
// file synced on every write, so that a restart keeps what it
// acknowledged; or, volatile, without persistence, so that a restart loses
// everything (a common cache setting, and what a failover to an empty
// replica amounts to).
type redisServer struct{ *redistest.Server }

func startRedis(t *testing.T) redisServer {
	return redisServer{redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")}
}

func startVolatileRedis(t *testing.T) redisServer { return redisServer{redistest.Start(t)} }

func (r redisServer) addr() string           { return r.Addr() }
func (r redisServer) url(addr string) string { return "redis://" + addr + "/0" }
func (r redisServer) restart(t *testing.T)   { r.Stop(t, syscall.SIGTERM); r.Restart(t) }

// pgServer is a PostgreSQL server of the test's own that the test
// restarts (a fast shutdown, then started again with the same data).
type pgServer struct{ *pgtest.Server }

func startPostgres(t *testing.T) pgServer { return pgServer{pgtest.Start(t)} }

func (s pgServer) addr() string { return s.Addr() }
func (s pgServer) url(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}
func (s pgServer) restart(t *testing.T) { s.Stop(t); s.Restart(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	servebin.Remove()
	os.Exit(code)
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
	cmd := exec.Command(servebin.Path(t), "serve", "--sdk", n.sdk, "--addr", fmt.Sprintf("127.0.0.1:%d", n.port), "--store", n.storeURL, "--ttl", "60s", "--max-sessions-per-client", "5000")
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
	c *redistest.Cluster
}

const clusterPrefix = "loss:"

func startFailoverCluster(t *testing.T) *failoverCluster {
	t.Helper()
	return &failoverCluster{c: redistest.StartCluster(t)}
}

func (f *failoverCluster) addr() string { return f.c.Nodes[0].Addr() }
func (f *failoverCluster) url(string) string {
	return f.c.URL("wait_replicas=1&wait_timeout=2s&prefix=" + clusterPrefix)
}

func (f *failoverCluster) restart(t *testing.T) {
	t.Helper()
	primary, replica := f.c.PrimaryOf(t, clusterPrefix+"{"+epoch.Key+"}")
	primary.Stop(t, syscall.SIGKILL)
	took := replica.WaitPromoted(t, 30*time.Second)
	primary.Restart(t)
	f.c.WaitOK(t)
	t.Logf("the epoch's primary killed; its replica promoted after %v; the killed node is back as a replica", took.Round(time.Millisecond))
}

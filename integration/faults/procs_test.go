package faults

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/store/postgres/pgtest"
	"github.com/elicitvault/elicitvault/store/redis/redistest"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
	"github.com/elicitvault/elicitvault/store/storetest"
)

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

	mu   sync.Mutex
	proc *servebin.Proc // nil once killed or stopped
	past string         // the stderr of the processes before proc
}

func startNode(t *testing.T, name, sdk, storeURL string, env []string) *node {
	t.Helper()
	n := &node{name: name, sdk: sdk, port: storetest.FreePort(t), storeURL: storeURL, env: env}
	n.start(t)
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) base() string { return fmt.Sprintf("http://127.0.0.1:%d", n.port) }

func (n *node) start(t *testing.T) {
	t.Helper()
	// Every client comes from 127.0.0.1: one client to the session caps,
	// whose default bound is for one real client.
	p := servebin.Serve(t, servebin.Path(t), n.env, "--sdk", n.sdk, "--addr", fmt.Sprintf("127.0.0.1:%d", n.port),
		"--store", n.storeURL, "--ttl", "60s", "--max-sessions-per-client", "5000")
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
}

// log returns what the node's processes wrote to stderr.
func (n *node) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return n.past
	}
	return n.past + n.proc.Log()
}

// end takes the running process, if any, out of n.
func (n *node) end() *servebin.Proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	n.proc = nil
	return p
}

// kill sends SIGKILL and waits for the process to go.
func (n *node) kill() {
	if p := n.end(); p != nil {
		p.Kill()
		n.mu.Lock()
		n.past += p.Log()
		n.mu.Unlock()
	}
}

func (n *node) stop(t *testing.T) {
	p := n.end()
	if p == nil {
		return
	}
	_, inTime := p.Stop(15 * time.Second)
	n.mu.Lock()
	n.past += p.Log()
	n.mu.Unlock()
	if !inTime {
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

// Package rediscluster runs a Redis Cluster of local redis-server
// processes for the integration tests: three primaries with a replica
// each, whose primaries a test can kill and bring back.
package rediscluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one redis-server process of the cluster.
type Node struct {
	port int
	args []string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr is the node's address.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *Node) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
}

// Cluster is six cluster-enabled redis-server processes: three primaries,
// each with a replica. A primary is failed over one to two seconds after
// it stops answering (cluster-node-timeout 1000), by its replica however
// far behind (cluster-replica-validity-factor 0).
type Cluster struct {
	Nodes []*Node
}

// Start starts the cluster; it is stopped when t ends. Without
// redis-server and redis-cli, t is skipped, or fails when
// ELICITVAULT_REQUIRE_BACKENDS=1 (as in CI).
func Start(t testing.TB) *Cluster {
	t.Helper()
	for _, p := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(p); err != nil {
			msg := p + " is not installed; this test runs a Redis Cluster of its own"
			if os.Getenv("ELICITVAULT_REQUIRE_BACKENDS") == "1" {
				t.Fatalf("%s, and ELICITVAULT_REQUIRE_BACKENDS=1", msg)
			}
			t.Skip(msg)
		}
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range 6 {
		n := startNode(t)
		c.Nodes = append(c.Nodes, n)
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK(t)
	return c
}

// startNode starts one node on a free port. A port found free can be taken
// by another process before the server binds it: a server that does not
// answer is killed and started again on another port.
func startNode(t testing.TB) *Node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		n := &Node{port: freePort(t), dir: t.TempDir()}
		n.args = []string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", n.dir, "--logfile", filepath.Join(n.dir, "log"),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0"}
		if n.start(t, 5*time.Second) {
			t.Cleanup(func() {
				n.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot die
				n.cmd.Process.Kill()
				<-n.done
			})
			return n
		}
		n.cmd.Process.Kill()
		<-n.done
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(n.dir, "log"))
			t.Fatalf("redis-server did not answer on three ports; its log:\n%s", log)
		}
	}
}

// start starts the process (again, after Kill: on the same port and data
// directory, so that it rejoins the cluster) and reports whether it
// answered within timeout.
func (n *Node) start(t testing.TB, timeout time.Duration) bool {
	t.Helper()
	n.done = make(chan struct{})
	n.cmd = exec.Command("redis-server", n.args...)
	// Killed with the test binary, even when a timeout panics it.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	cmd, done := n.cmd, n.done
	go func() { cmd.Wait(); close(done) }()
	c := n.client()
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Kill sends SIGKILL to n and waits for it to exit.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	n.cmd.Process.Kill()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server did not exit")
	}
}

// Restart starts n again after Kill; it rejoins the cluster (as a replica
// when its replica was promoted meanwhile).
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	if !n.start(t, 10*time.Second) {
		t.Fatal("redis-server did not answer within 10s of its restart")
	}
}

// URL returns a redis+cluster:// store URL naming two of the nodes, with
// query (such as "wait_replicas=1&prefix=x:").
func (c *Cluster) URL(query string) string {
	u := "redis+cluster://" + c.Nodes[0].Addr() + "," + c.Nodes[1].Addr()
	if query != "" {
		u += "/?" + query
	}
	return u
}

// WaitOK waits until every node that runs reports cluster_state:ok with
// every slot served, and every replica has its link to its primary up (so
// that WAIT counts it).
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		select {
		case <-n.done:
			continue // killed
		default:
		}
		cl := n.client()
		for {
			info, _ := cl.ClusterInfo(context.Background()).Result()
			repl, _ := cl.Info(context.Background(), "replication").Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") &&
				(strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("cluster not ok after 30s: %s\n%s", info, repl)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// PrimaryOf returns the primary serving key (a key as Redis sees it,
// prefix and hash tag included), and its replica.
func (c *Cluster) PrimaryOf(t testing.TB, key string) (primary, replica *Node) {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[0].Addr()}})
	defer cc.Close()
	m, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	primary = c.node(m.Options().Addr)
	if primary == nil {
		t.Fatalf("no node at %s", m.Options().Addr)
	}
	pc := primary.client()
	defer pc.Close()
	info, err := pc.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(line, "slave0:")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(strings.TrimSpace(rest), ",") {
			if p, ok := strings.CutPrefix(field, "port="); ok {
				replica = c.node("127.0.0.1:" + p)
			}
		}
	}
	if replica == nil {
		t.Fatalf("primary %s has no replica: %s", primary.Addr(), info)
	}
	return primary, replica
}

func (c *Cluster) node(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// WaitPromoted waits until n reports itself a primary and returns how
// long that took.
func (n *Node) WaitPromoted(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	cl := n.client()
	defer cl.Close()
	for {
		info, _ := cl.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "role:master") {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s not promoted after %v", n.Addr(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

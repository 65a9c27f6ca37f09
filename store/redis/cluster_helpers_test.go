package redis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// node is a redis-server process of a test's own.
type node struct {
	port int
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

func (n *node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *node) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
}

// kill sends SIGKILL and waits for the process to exit.
func (n *node) kill(t testing.TB) {
	t.Helper()
	n.cmd.Process.Kill()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server did not exit")
	}
}

func (n *node) signal(sig syscall.Signal) { n.cmd.Process.Signal(sig) }

// needRedisTools skips t, or fails it when backends are required, unless
// every named program is installed.
func needRedisTools(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			msg := p + " is not installed; this test runs servers of its own"
			storetest.Skip(t, msg)
		}
	}
}

// freePort returns a loopback port that nothing listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode starts redis-server with args on a free port, data in a
// directory of its own, and waits until it answers. The process is killed
// when t ends. A port found free can be taken by another process before
// the server binds it: a server that does not answer is killed and
// started again on another port.
func startNode(t testing.TB, args ...string) *node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		n := &node{port: freePort(t)}
		dir := t.TempDir()
		base := []string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "log")}
		n.args = append(base, args...)
		if n.tryStart(t, 5*time.Second) {
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
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("redis-server did not answer on three ports; its log:\n%s", log)
		}
	}
}

// start starts the process (again, after kill: on the same port and data
// directory) and waits until it answers.
func (n *node) start(t testing.TB) {
	t.Helper()
	if !n.tryStart(t, 10*time.Second) {
		t.Fatal("redis-server did not answer within 10s")
	}
}

// tryStart starts the process and reports whether it answered within
// timeout.
func (n *node) tryStart(t testing.TB, timeout time.Duration) bool {
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

// redisCluster is a Redis Cluster of six local redis-server processes:
// three primaries, each with one replica.
type redisCluster struct {
	nodes []*node
}

// startCluster starts the six servers and makes a cluster of them with
// redis-cli --cluster create. A primary is failed over one to two seconds
// after it stops answering (cluster-node-timeout 1000), by a replica
// however far behind (cluster-replica-validity-factor 0).
func startCluster(t testing.TB) *redisCluster {
	t.Helper()
	needRedisTools(t, "redis-server", "redis-cli")
	c := &redisCluster{}
	args := []string{"redis-cli", "--cluster", "create"}
	for range 6 {
		n := startNode(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0")
		c.nodes = append(c.nodes, n)
		args = append(args, n.addr())
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(t, c.nodes)
	waitReplicasSynced(t, c.nodes)
	return c
}

// waitReplicasSynced waits until every replica among nodes has its link
// to its primary up, so that WAIT can count it.
func waitReplicasSynced(t testing.TB, nodes []*node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		cl := n.client()
		for {
			info, _ := cl.Info(context.Background(), "replication").Result()
			if strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("replica %s not in sync after 30s", n.addr())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// url returns a redis+cluster:// URL naming two of the nodes, with query.
func (c *redisCluster) url(query string) string {
	u := "redis+cluster://" + c.nodes[0].addr() + "," + c.nodes[1].addr()
	if query != "" {
		u += "/?" + query
	}
	return u
}

// waitOK waits until every node of alive reports cluster_state:ok and
// every slot is served by a primary that answers.
func (c *redisCluster) waitOK(t testing.TB, alive []*node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range alive {
		cl := n.client()
		for {
			info, _ := cl.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("cluster not ok after 30s: %s", info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// primaryOf returns the primary serving key, and its replica.
func (c *redisCluster) primaryOf(t testing.TB, key string) (primary, replica *node) {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.nodes[0].addr()}})
	defer cc.Close()
	m, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	addr := m.Options().Addr
	for _, n := range c.nodes {
		if n.addr() == addr {
			primary = n
		}
	}
	if primary == nil {
		t.Fatalf("no node at %s", addr)
	}
	pc := primary.client()
	defer pc.Close()
	info, err := pc.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if !strings.HasPrefix(line, "slave0:") {
			continue
		}
		for field := range strings.SplitSeq(strings.TrimSpace(strings.TrimPrefix(line, "slave0:")), ",") {
			if p, ok := strings.CutPrefix(field, "port="); ok {
				for _, n := range c.nodes {
					if strconv.Itoa(n.port) == p {
						replica = n
					}
				}
			}
		}
	}
	if replica == nil {
		t.Fatalf("primary %s has no replica: %s", addr, info)
	}
	return primary, replica
}

// without returns the nodes of c other than dead.
func (c *redisCluster) without(dead ...*node) []*node {
	var alive []*node
outer:
	for _, n := range c.nodes {
		for _, d := range dead {
			if n == d {
				continue outer
			}
		}
		alive = append(alive, n)
	}
	return alive
}

// waitPromoted waits until n reports itself a primary.
func waitPromoted(t testing.TB, n *node, timeout time.Duration) time.Duration {
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
			t.Fatalf("%s not promoted after %v", n.addr(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sentinelSet is a primary with two replicas and a Sentinel watching them
// under the name "evmaster".
type sentinelSet struct {
	primary  *node
	replicas []*node
	sentinel *node
}

// startSentinel starts the set. The Sentinel fails the primary over one
// second after it stops answering.
func startSentinel(t testing.TB) *sentinelSet {
	t.Helper()
	needRedisTools(t, "redis-server")
	s := &sentinelSet{primary: startNode(t)}
	for range 2 {
		s.replicas = append(s.replicas, startNode(t, "--replicaof", "127.0.0.1", strconv.Itoa(s.primary.port)))
	}
	// Sentinel rewrites its configuration file, so it needs one of its own.
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	port := freePort(t)
	cfg := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel monitor evmaster 127.0.0.1 %d 1
sentinel down-after-milliseconds evmaster 1000
sentinel failover-timeout evmaster 5000
sentinel parallel-syncs evmaster 2
`, port, dir, s.primary.port)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	sn := &node{port: port, done: make(chan struct{})}
	sn.cmd = exec.Command("redis-server", conf, "--sentinel")
	sn.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sn.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server --sentinel: %v", err)
	}
	go func() { sn.cmd.Wait(); close(sn.done) }()
	t.Cleanup(func() { sn.cmd.Process.Kill(); <-sn.done })
	s.sentinel = sn
	waitReplicasSynced(t, s.replicas)
	// Wait until the Sentinel knows the replicas.
	deadline := time.Now().Add(20 * time.Second)
	cl := sn.client()
	defer cl.Close()
	for {
		rs, err := cl.Do(context.Background(), "SENTINEL", "REPLICAS", "evmaster").Slice()
		if err == nil && len(rs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sentinel does not see two replicas after 20s: %v %v", rs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func (s *sentinelSet) url(query string) string {
	u := "redis+sentinel://" + s.sentinel.addr() + "/0?master=evmaster"
	if query != "" {
		u += "&" + query
	}
	return u
}

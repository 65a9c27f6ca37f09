// Package redistest is a test kit, not part of the store: it runs
// redis-server processes of a test's own, one server or a Redis Cluster
// of six, which a test may stop (cleanly, as a crash, or paused) and start
// again, to see what a store does through a restart or a failover. The
// Redis store's tests and the fault suite of the integration module share
// it; its API follows what they need and may change in any release.
// Without redis-server (and redis-cli, for a cluster) a test is skipped,
// or fails under ELICITVAULT_REQUIRE_BACKENDS=1 (see [storetest.Skip]).
package redistest

import (
	"context"
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

// Server is a redis-server process on a loopback port of its own.
type Server struct {
	port   int
	args   []string
	dir    string
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	paused bool          // stopped with SIGSTOP
}

// Start starts redis-server on a free port, with its data in a directory
// of its own and no persistence unless args (more redis-server options,
// which win over the defaults) ask for it, and waits until it answers. It
// is killed when t ends, and with the test binary.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	need(t, "redis-server")
	// A port found free can be taken by another process before the server
	// binds it: a server that does not answer is killed and started again
	// on another port.
	for attempt := 1; ; attempt++ {
		s := &Server{port: storetest.FreePort(t), dir: t.TempDir()}
		s.args = append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", filepath.Join(s.dir, "log")}, args...)
		if s.start(t, 5*time.Second) {
			t.Cleanup(func() {
				s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot die
				s.cmd.Process.Kill()
				<-s.done
			})
			return s
		}
		s.cmd.Process.Kill()
		<-s.done
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
			t.Fatalf("redis-server did not answer on three ports; its log:\n%s", log)
		}
	}
}

// Addr is the server's host:port (its store URL is "redis://" + Addr()).
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *Server) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
}

// start starts the process, on the same port and data directory as
// before, and reports whether it answered within timeout.
func (s *Server) start(t testing.TB, timeout time.Duration) bool {
	t.Helper()
	s.done = make(chan struct{})
	s.cmd = exec.Command("redis-server", s.args...)
	// Killed with the test binary, even when a timeout panics it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	cmd, done := s.cmd, s.done
	go func() { cmd.Wait(); close(done) }()
	return s.answers(timeout)
}

// answers reports whether the server answered a PING within timeout.
func (s *Server) answers(timeout time.Duration) bool {
	c := s.client()
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

// Restart starts the server again after Stop, on the same port and data
// directory (a cluster node rejoins its cluster), or resumes it after
// Stop with SIGSTOP, and waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.paused {
		s.paused = false
		s.cmd.Process.Signal(syscall.SIGCONT)
		if !s.answers(10 * time.Second) {
			t.Fatal("redis-server did not answer within 10s of SIGCONT")
		}
		return
	}
	if !s.start(t, 10*time.Second) {
		t.Fatal("redis-server did not answer within 10s of its restart")
	}
}

// Stop stops the server with sig and, unless sig is SIGSTOP, waits until
// it has exited: SIGTERM shuts it down cleanly (SHUTDOWN, which saves only
// what args asked to persist), SIGKILL as a crash would. SIGSTOP pauses it
// (a network partition, as its peers see it) until Restart resumes it.
func (s *Server) Stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.cmd.Process.Signal(sig)
	if sig == syscall.SIGSTOP {
		s.paused = true
		return
	}
	if s.paused { // a paused process handles SIGTERM once resumed
		s.paused = false
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("redis-server did not exit on %v", sig)
	}
}

// WaitPromoted waits until s reports itself a primary, and returns how
// long that took; it fails t after timeout.
func (s *Server) WaitPromoted(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	cl := s.client()
	defer cl.Close()
	for {
		info, _ := cl.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "role:master") {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s not promoted after %v", s.Addr(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Cluster is a Redis Cluster of six servers: three primaries, each with a
// replica. A primary is failed over one to two seconds after it stops
// answering (cluster-node-timeout 1000), by its replica however far
// behind (cluster-replica-validity-factor 0).
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts the six servers, makes a cluster of them with
// redis-cli --cluster create and waits until it serves every slot; it is
// killed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	need(t, "redis-cli")
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range 6 {
		n := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0")
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

// URL returns a redis+cluster:// store URL naming two of the nodes, with
// query (such as "wait_replicas=1&prefix=x:").
func (c *Cluster) URL(query string) string {
	u := "redis+cluster://" + c.Nodes[0].Addr() + "," + c.Nodes[1].Addr()
	if query != "" {
		u += "/?" + query
	}
	return u
}

// WaitOK waits until every node that runs (not stopped or killed) reports
// cluster_state:ok with every slot served, and every replica has its link
// to its primary up (so that WAIT counts it).
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		select {
		case <-n.done:
			continue
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

// PrimaryOf returns the primary serving key (the key as Redis sees it,
// prefix and hash tag included), and its replica.
func (c *Cluster) PrimaryOf(t testing.TB, key string) (primary, replica *Server) {
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

func (c *Cluster) node(addr string) *Server {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// need skips t (see storetest.Skip) unless program is installed.
func need(t testing.TB, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		storetest.Skip(t, program+" is not installed; this test runs Redis servers of its own")
	}
}

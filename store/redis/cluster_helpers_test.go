package redis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store/redis/redistest"
	"github.com/redis/go-redis/v9"
)

// clientOf returns a client of the server at addr; the caller closes it.
func clientOf(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
}

// sentinelSet is a primary with two replicas and a Sentinel watching them
// under the name "evmaster".
type sentinelSet struct {
	primary      *redistest.Server
	replicas     []*redistest.Server
	sentinelAddr string
}

// startSentinel starts the set. The Sentinel fails the primary over one
// second after it stops answering.
func startSentinel(t testing.TB) *sentinelSet {
	t.Helper()
	s := &sentinelSet{primary: redistest.Start(t)}
	host, port, _ := strings.Cut(s.primary.Addr(), ":")
	for range 2 {
		s.replicas = append(s.replicas, redistest.Start(t, "--replicaof", host, port))
	}
	// Sentinel rewrites its configuration file, so it needs one of its own.
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.sentinelAddr = ln.Addr().String()
	ln.Close()
	_, sport, _ := strings.Cut(s.sentinelAddr, ":")
	cfg := fmt.Sprintf(`port %s
bind 127.0.0.1
dir %s
sentinel monitor evmaster %s %s 1
sentinel down-after-milliseconds evmaster 1000
sentinel failover-timeout evmaster 5000
sentinel parallel-syncs evmaster 2
`, sport, dir, host, port)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server --sentinel: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitReplicasSynced(t, s.replicas)
	// Wait until the Sentinel knows the replicas.
	deadline := time.Now().Add(20 * time.Second)
	cl := clientOf(s.sentinelAddr)
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

// waitReplicasSynced waits until every replica among servers has its link
// to its primary up, so that WAIT can count it.
func waitReplicasSynced(t testing.TB, servers []*redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range servers {
		cl := clientOf(n.Addr())
		for {
			info, _ := cl.Info(context.Background(), "replication").Result()
			if strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("replica %s not in sync after 30s", n.Addr())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

func (s *sentinelSet) url(query string) string {
	u := "redis+sentinel://" + s.sentinelAddr + "/0?master=evmaster"
	if query != "" {
		u += "&" + query
	}
	return u
}

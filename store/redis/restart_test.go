package redis_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server process of the test's own, which the test
// may stop and start again on the same port.
type redisServer struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startPrivateRedis starts redis-server on a free port, with no
// persistence: a restart loses every key, as a failover to an empty replica
// would. It skips t when redis-server is not installed (and fails it when
// ELICITVAULT_REQUIRE_BACKENDS=1).
func startPrivateRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		msg := "redis-server is not installed; this test runs a server of its own"
		storetest.Skip(t, msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{t: t, port: port, dir: t.TempDir()}
	r.start()
	t.Cleanup(func() {
		if r.cmd != nil {
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start starts the server and waits until it answers.
func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server did not answer within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops the server: with SHUTDOWN NOSAVE, or by killing the process,
// and waits until it has exited.
func (r *redisServer) stop(kill bool) {
	r.t.Helper()
	if kill {
		r.cmd.Process.Kill()
	} else {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
		c.Do(context.Background(), "SHUTDOWN", "NOSAVE") // its reply is the connection closing
		c.Close()
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("redis-server did not exit")
	}
	r.cmd = nil
}

// TestServerRestart runs storetest.RunRestart on a server of the test's
// own, stopped once with SHUTDOWN NOSAVE and once by killing it.
func TestServerRestart(t *testing.T) {
	srv := startPrivateRedis(t)
	// go-redis logs every failed dial while the server is down.
	quietRedisLog.quiet.Store(true)
	t.Cleanup(func() { quietRedisLog.quiet.Store(false) })
	storetest.RunRestart(t, storetest.Server{
		Name: "redis",
		Open: func(t *testing.T) store.Store {
			s, err := evredis.New(t.Context(), srv.url(), &evredis.Options{Prefix: "restart:"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Stops: []func(*testing.T){
			func(*testing.T) { srv.stop(false) },
			func(*testing.T) { srv.stop(true) },
		},
		Start: func(*testing.T) { srv.start() },
	})
}

// quietRedisLog is go-redis's logger in this test binary: the standard
// logger, unless quiet.
var quietRedisLog = func() *quietLogger {
	l := new(quietLogger)
	redis.SetLogger(l)
	return l
}()

type quietLogger struct{ quiet atomic.Bool }

func (l *quietLogger) Printf(_ context.Context, format string, v ...any) {
	if !l.quiet.Load() {
		log.Printf(format, v...)
	}
}

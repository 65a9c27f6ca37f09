package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s, and %s=1", msg, requireEnv)
		}
		t.Skip(msg)
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

// wantCleanFailure fails t unless err is the wrapped error of a failed
// operation: not nil, not an answer (ErrNotFound), not ErrClosed, and
// named after the operation.
func wantCleanFailure(t *testing.T, op string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s with the server down succeeded", op)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrInvalidArgument):
		t.Errorf("%s with the server down: %v, want the connection's error", op, err)
	case !strings.HasPrefix(err.Error(), "redis: "+op+": "):
		t.Errorf("%s with the server down: %q, want it wrapped as \"redis: %s: …\"", op, err, op)
	}
}

// TestServerRestart stops the server under a store twice, once with
// SHUTDOWN NOSAVE and once by killing it, while operations are in flight and
// a waiter waits for a result. While the server is down every operation
// fails with a wrapped error; once it is back on the same port, the same
// store works again, the waiter's subscription is resubscribed, and the
// waiter gets the result written after the restart. Nothing is left
// running after Close.
func TestServerRestart(t *testing.T) {
	srv := startPrivateRedis(t)
	// go-redis logs every failed dial while the server is down.
	quietRedisLog.quiet.Store(true)
	t.Cleanup(func() { quietRedisLog.quiet.Store(false) })
	storetest.CheckNoLeaks(t)
	ctx := t.Context()
	s, err := evredis.New(ctx, srv.url(), &evredis.Options{Prefix: "restart:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The node that writes the result, a store of its own.
	resolver, err := evredis.New(ctx, srv.url(), &evredis.Options{Prefix: "restart:"})
	if err != nil {
		t.Fatal(err)
	}
	defer resolver.Close()

	// The waiter: subscribed before anything happens, it reads the store
	// again after every message and every resubscription.
	waiter := storetest.StartWaiter(t, ctx, s, "result-channel", "result")
	defer waiter.Close()

	// The burst: workers run every operation in turn until told to stop.
	burst := storetest.StartBurst(ctx, 8, []store.Store{s}, func(w int, err error) {
		if !strings.HasPrefix(err.Error(), "redis: ") || errors.Is(err, store.ErrClosed) {
			t.Errorf("worker %d: %v", w, err)
		}
	})

	for round, kill := range []bool{false, true} {
		time.Sleep(200 * time.Millisecond) // let the burst run against a live server
		before := waiter.Resubscriptions()
		srv.stop(kill)
		down := time.Now()

		// Down: every operation fails, cleanly.
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		exp := time.Now().Add(time.Minute)
		wantCleanFailure(t, "put", s.Put(octx, "k", []byte("v"), exp))
		_, err := s.Get(octx, "k")
		wantCleanFailure(t, "get", err)
		_, err = s.Take(octx, "k")
		wantCleanFailure(t, "take", err)
		_, err = s.PutIfAbsent(octx, "k", []byte("v"), exp)
		wantCleanFailure(t, "put if absent", err)
		_, err = s.Swap(octx, "k", []byte("v"), exp)
		wantCleanFailure(t, "swap", err)
		_, err = s.CompareAndSwap(octx, "k", []byte("v"), []byte("w"), exp)
		wantCleanFailure(t, "compare and swap", err)
		wantCleanFailure(t, "delete", s.Delete(octx, "k"))
		_, _, err = s.Scan(octx, "", 10)
		wantCleanFailure(t, "scan", err)
		wantCleanFailure(t, "publish", s.Publish(octx, "c", []byte("m")))
		cancel()
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if extra, err := s.Subscribe(sctx, "another-channel"); err == nil {
			extra.Close()
			t.Error("subscribe with the server down succeeded")
		} else if !strings.HasPrefix(err.Error(), "redis: subscribe: ") {
			t.Errorf("subscribe with the server down: %v", err)
		}
		cancel()

		srv.start()
		up := time.Now()
		t.Logf("round %d (kill %v): down for %v", round, kill, up.Sub(down).Round(time.Millisecond))

		// Up: the same stores work again, within a few seconds.
		deadline := time.Now().Add(15 * time.Second)
		for s.Put(ctx, "k", []byte("back"), time.Now().Add(time.Minute)) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the store did not recover", round)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !waiter.AwaitResubscribed(before, deadline) {
			t.Fatalf("round %d: the waiter's subscription was not resubscribed", round)
		}
		if w := burst.AwaitRecovered(up, deadline); w >= 0 {
			t.Fatalf("round %d: burst worker %d did not recover", round, w)
		}
	}
	failures := burst.Stop()
	if failures == 0 {
		t.Error("no operation of the burst failed: the server was not stopped under it")
	}

	// The result is written on the other node after the restarts: the
	// waiter gets it.
	if err := resolver.Put(ctx, "result", []byte("the answer"), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Publish(ctx, "result-channel", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if v := waiter.Result(t, 10*time.Second); string(v) != "the answer" {
		t.Fatalf("the waiter got %q", v)
	}
	t.Logf("%d operations of the burst failed while the server was down", failures)
	waiter.Close()
	if err := resolver.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
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

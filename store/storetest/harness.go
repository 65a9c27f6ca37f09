package storetest

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// A Backend opens the stores of one backend for RunBackend, whose tests
// need more than a fresh store: a second process on the same data, and
// connections cut at the server.
type Backend struct {
	// Name is the backend's name, which starts its stores' errors
	// ("redis", "postgres").
	Name string

	// Open opens a store in a namespace of its own (a Redis key prefix, a
	// PostgreSQL schema), closes it and removes the namespace when t ends,
	// and returns the namespace and the cuts of that store.
	Open func(t *testing.T) (s store.Store, namespace string, cut Cuts)

	// URL is the server's URL. TakeLostReply reopens the store with its
	// host:port replaced by a TCP proxy's.
	URL string

	// Reopen opens another store on namespace, which Open made, at url
	// (URL, or URL through a proxy); RunBackend closes it when t ends. It
	// also runs in a child process (the test binary started again), with
	// the environment of the parent.
	Reopen func(t *testing.T, namespace, url string) (store.Store, error)
}

// Cuts closes a store's connections at the server, as a failover, a
// restart or a network fault would.
type Cuts struct {
	// Subscriptions closes the connection(s) that carry the store's
	// subscriptions and returns how many it closed.
	Subscriptions func(t *testing.T) int

	// All closes every connection of the store and returns how many it
	// closed.
	All func(t *testing.T) int
}

// RunBackend runs the conformance suite ([Run]) on the stores of Open,
// then the tests that need a Backend:
//
//   - CrossProcess: a waiter in this process and a writer in another
//     (this test binary started again) share the server; the waiter's
//     subscription connection is cut mid-wait. The waiter must get the
//     result, from the message or from its read after Resubscribed, and
//     must be told that it was resubscribed.
//   - SubscriptionsCut: the connection under two subscriptions is cut
//     twice; each subscription receives Resubscribed, then the messages
//     published afterwards; a channel subscribed afterwards works; Close
//     leaves nothing running.
//   - Terminated: every connection of a store is cut five times under a
//     burst of every operation and a waiter; each operation fails cleanly,
//     at most one per connection cut, and the waiter gets its result.
//   - TakeLostReply: the reply of a Take that the server ran is lost (the
//     connection cut right before it); Take must return the value all the
//     same, and only to it (a retry of the same call, never another's).
//
// A backend's test calls it from one top-level test; the child process of
// CrossProcess runs that same test, so RunBackend must be reached before
// anything the child must not do.
func RunBackend(t *testing.T, b Backend) {
	if ns, ok := os.LookupEnv(childEnv); ok {
		t.Run("CrossProcess", func(t *testing.T) { crossProcessChild(t, b, ns) })
		return
	}
	t.Run("Conformance", func(t *testing.T) {
		Run(t, func(t *testing.T) store.Store {
			s, _, _ := b.Open(t)
			return s
		})
	})
	t.Run("CrossProcess", func(t *testing.T) { testCrossProcess(t, b) })
	t.Run("SubscriptionsCut", func(t *testing.T) { testSubscriptionsCut(t, b) })
	t.Run("Terminated", func(t *testing.T) { testTerminated(t, b) })
	t.Run("TakeLostReply", func(t *testing.T) { testTakeLostReply(t, b) })
}

// childEnv holds, in the child process of CrossProcess, the namespace of
// the parent's store.
const childEnv = "ELICITVAULT_STORETEST_CHILD_NAMESPACE"

// Names the parent and the child of CrossProcess share, in the parent's
// namespace.
const (
	xprocChannel = "result-channel"
	xprocResult  = "result"
	xprocGo      = "go"
)

// runPattern is the -test.run pattern that selects exactly the test
// named name (a path of subtests).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func testCrossProcess(t *testing.T, b Backend) {
	s, ns, cut := b.Open(t)
	ctx := t.Context()

	sub, err := s.Subscribe(ctx, xprocChannel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if _, err := s.Get(ctx, xprocResult); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get before the child ran: %v, want ErrNotFound", err)
	}

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+ns)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}

	// Mid-wait: the subscription's connection dies, then the child goes.
	if n := cut.Subscriptions(t); n != 1 {
		t.Fatalf("cut %d subscription connections, want 1", n)
	}
	if err := s.Put(ctx, xprocGo, []byte("go"), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("Put: %v", err)
	}

	// The waiter: read the store, and again after every message.
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	var result []byte
	resubscribed, messages := false, 0
	for result == nil || !resubscribed {
		if result == nil {
			v, err := s.Get(ctx, xprocResult)
			switch {
			case err == nil:
				result = v
				t.Logf("result read after %d messages (resubscribed: %v)", messages, resubscribed)
				continue
			case !errors.Is(err, store.ErrNotFound):
				t.Fatalf("Get: %v", err)
			}
		}
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			if m.Resubscribed {
				resubscribed = true
			} else {
				messages++
			}
		case <-timeout.C:
			t.Fatalf("after 30s: result %q, resubscribed %v; child's output:\n%s", result, resubscribed, out.Bytes())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; output:\n%s", err, out.Bytes())
	}
	if string(result) != "written by the child" {
		t.Errorf("result = %q", result)
	}
}

// crossProcessChild is the child's side of CrossProcess: it waits for the
// parent's go, writes the result and announces it.
func crossProcessChild(t *testing.T, b Backend, ns string) {
	ctx := t.Context()
	s := reopen(t, b, ns, b.URL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.Get(ctx, xprocGo)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the parent never said go")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Put(ctx, xprocResult, []byte("written by the child"), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := s.Publish(ctx, xprocChannel, []byte(xprocResult)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

func testSubscriptionsCut(t *testing.T, b Backend) {
	// Counted before the store opens its connections, which are closed
	// before the count is checked.
	checkNoLeaks(t)
	s, _, cut := b.Open(t)
	ctx := t.Context()

	a := mustSubscribe(t, s, "a")
	bsub := mustSubscribe(t, s, "b")
	for round := range 2 {
		if n := cut.Subscriptions(t); n != 1 {
			t.Fatalf("round %d: cut %d subscription connections, want 1", round, n)
		}
		waitResubscribed(t, a, 10*time.Second)
		waitResubscribed(t, bsub, 10*time.Second)
		for _, ch := range []string{"a", "b"} {
			if err := s.Publish(ctx, ch, []byte("after "+ch)); err != nil {
				t.Fatalf("Publish: %v", err)
			}
		}
		if got := RecvData(t, a, 5*time.Second); string(got) != "after a" {
			t.Errorf("a received %q", got)
		}
		if got := RecvData(t, bsub, 5*time.Second); string(got) != "after b" {
			t.Errorf("b received %q", got)
		}
	}
	// A channel subscribed after the reconnection works as usual.
	c := mustSubscribe(t, s, "c")
	if err := s.Publish(ctx, "c", []byte("on c")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got := RecvData(t, c, 5*time.Second); string(got) != "on c" {
		t.Errorf("c received %q", got)
	}
	a.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// reopen opens another store of b on namespace at url, closed when t
// ends.
func reopen(t *testing.T, b Backend, namespace, url string) store.Store {
	t.Helper()
	s, err := b.Reopen(t, namespace, url)
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	CloseAtEnd(t, s)
	return s
}

// waitResubscribed reads sub until a Resubscribed notice arrives, and
// fails t after timeout.
func waitResubscribed(t testing.TB, sub store.Subscription, timeout time.Duration) {
	t.Helper()
	next(t, sub, timeout, true)
}

// RecvData reads sub until a data message arrives, skipping Resubscribed
// notices, and fails t after timeout.
func RecvData(t testing.TB, sub store.Subscription, timeout time.Duration) []byte {
	t.Helper()
	return next(t, sub, timeout, false).Data
}

// next reads sub until a message arrives that is a Resubscribed notice or
// not, as resubscribed says, and fails t after timeout.
func next(t testing.TB, sub store.Subscription, timeout time.Duration, resubscribed bool) store.Message {
	t.Helper()
	want := "a message"
	if resubscribed {
		want = "a Resubscribed notice"
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				t.Fatalf("subscription ended (Err: %v), want %s", sub.Err(), want)
			}
			if m.Resubscribed == resubscribed {
				return m
			}
		case <-timer.C:
			t.Fatalf("no %s after %v", want, timeout)
		}
	}
}

// CloseAtEnd closes s when t ends, and fails t if Close fails for any
// reason but that s was closed already.
func CloseAtEnd(t testing.TB, s store.Store) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
}

// requireEnv is the variable that turns a missing server or tool into a
// test failure instead of a skip. CI sets it to 1: there a skip is a
// failure.
const requireEnv = "ELICITVAULT_REQUIRE_BACKENDS"

// Skip skips t with msg, or fails it when ELICITVAULT_REQUIRE_BACKENDS is
// 1 (CI sets it: there a skip is a failure).
func Skip(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s, and %s=1", msg, requireEnv)
	}
	t.Skip(msg)
}

// ServerURL returns the test server's URL from env, or skips t (see
// Skip); server names the server in the message.
func ServerURL(t testing.TB, env, server string) string {
	t.Helper()
	if u := os.Getenv(env); u != "" {
		return u
	}
	Skip(t, "no "+server+" server: set "+env+" to its URL")
	return ""
}

// FreePort returns a loopback TCP port that nothing listened on a moment
// ago, for a server of a test's own that must be told its address before
// it starts.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

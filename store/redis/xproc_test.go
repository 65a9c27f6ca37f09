package redis_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
)

// The environment of the child process of TestCrossProcess.
const (
	childEnv       = "ELICITVAULT_TEST_CROSS_PROCESS_CHILD" // "1" marks the child
	childPrefixEnv = "ELICITVAULT_TEST_CROSS_PROCESS_PREFIX"
)

// Names the parent and the child of TestCrossProcess share, under the
// parent's random prefix.
const (
	xprocChannel = "result-channel"
	xprocResult  = "result"
	xprocGo      = "go"
)

// TestCrossProcess runs the waiter's protocol across two OS processes that
// share the server. The parent subscribes, starts the child (this test
// binary again), kills its own Pub/Sub connection and lets the child go; the
// child writes the result and publishes. The parent must get the result,
// from the message or from the read after Resubscribed, and must have been
// told it was resubscribed.
func TestCrossProcess(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		crossProcessChild(t)
		return
	}
	url := serverURL(t)
	c := admin(t, url)
	name := randomName("client")
	s, prefix := openStore(t, withClientName(t, url, name))
	ctx := t.Context()

	sub, err := s.Subscribe(ctx, xprocChannel)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if _, err := s.Get(ctx, xprocResult); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get before the child ran: %v, want ErrNotFound", err)
	}

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrossProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		childEnv+"=1",
		childPrefixEnv+"="+prefix,
		serverEnv+"="+url,
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}

	// Mid-wait: the subscription's connection dies, then the child goes.
	if n := killClients(t, c, "pubsub", name); n != 1 {
		t.Fatalf("killed %d Pub/Sub connections, want 1", n)
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

// crossProcessChild is the child's side of TestCrossProcess.
func crossProcessChild(t *testing.T) {
	ctx := t.Context()
	s, err := evredis.New(ctx, serverURL(t), &evredis.Options{Prefix: os.Getenv(childPrefixEnv)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
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

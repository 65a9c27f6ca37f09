package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// downReads is a store whose reads of an answer fail for a while after
// it is announced: a primary that died right after the answer was
// written, before its replica is promoted.
type downReads struct {
	store.Store
	mu      sync.Mutex
	lastPut string // the key of the last write, the answer's when it is announced
	down    string // the key whose reads fail
	fails   atomic.Int32
}

var errDown = errors.New("connection refused")

func (d *downReads) Put(ctx context.Context, key string, v []byte, exp time.Time) error {
	d.mu.Lock()
	d.lastPut = key
	d.mu.Unlock()
	return d.Store.Put(ctx, key, v, exp)
}

func (d *downReads) Get(ctx context.Context, key string) ([]byte, error) {
	d.mu.Lock()
	down := key == d.down
	d.mu.Unlock()
	if down {
		d.fails.Add(1)
		return nil, errDown
	}
	return d.Store.Get(ctx, key)
}

func (d *downReads) Publish(ctx context.Context, ch string, msg []byte) error {
	d.mu.Lock()
	d.down = d.lastPut
	d.mu.Unlock()
	err := d.Store.Publish(ctx, ch, msg)
	time.AfterFunc(300*time.Millisecond, func() { // the replica is promoted
		d.mu.Lock()
		d.down = ""
		d.mu.Unlock()
	})
	return err
}

// A URL-mode answer written while the store then stops answering the
// waiter's reads (a failover) is not lost: the waiter tries again until
// the store answers, within the TTL, and the call gets the answer. Before,
// the first failed read failed the call although the answer was safe.
func TestWaitRidesOutStoreFailure(t *testing.T) {
	for _, version := range []string{legacy, "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			st := &downReads{Store: memory.New(nil)}
			t.Cleanup(func() { st.Close() })
			got := callURLOver(t, version, st, 20*time.Second, func(link string) {
				acceptOnPage(t, link)
			})
			if got != "accept" {
				t.Fatalf("got %q", got)
			}
			if st.fails.Load() == 0 {
				t.Fatal("the store never failed a read: the test tested nothing")
			}
		})
	}
}

// unannounced is a store that drops every announcement: what the waiter
// sees when the node that wrote the answer died before it published, or
// when the backend lost the message without ending the subscription.
type unannounced struct {
	store.Store
	dropped atomic.Int32
}

func (u *unannounced) Publish(context.Context, string, []byte) error {
	u.dropped.Add(1)
	return nil
}

// An answer whose announcement never comes reaches its waiting call
// within seconds, by the waiter's own reads of the store, not at the
// expiry. Before, the call waited for the TTL (or the client's timeout):
// TestScaleOut saw 30 s round trips when a node was killed between
// writing an answer and announcing it.
func TestWaitFindsUnannouncedAnswer(t *testing.T) {
	for _, version := range []string{legacy, "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			st := &unannounced{Store: memory.New(nil)}
			t.Cleanup(func() { st.Close() })
			var answered time.Time
			got := callURLOver(t, version, st, 5*time.Minute, func(link string) {
				time.Sleep(200 * time.Millisecond) // the waiter waits first
				acceptOnPage(t, link)
				answered = time.Now()
			})
			if got != "accept" {
				t.Fatalf("got %q", got)
			}
			if st.dropped.Load() == 0 {
				t.Fatal("no announcement was dropped: the test tested nothing")
			}
			if d := time.Since(answered); d > 5*time.Second {
				t.Fatalf("the call took its answer %v after the page", d)
			}
		})
	}
}

// acceptOnPage chooses Accept on a URL-mode link's page.
func acceptOnPage(t *testing.T, link string) {
	resp, err := http.PostForm(link, url.Values{"action": {"accept"}})
	if err != nil {
		t.Errorf("page: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("page: %s", resp.Status)
	}
}

// callURLOver calls a tool that asks in URL mode, on an Elicitor over st
// with the given TTL, from a client of the given protocol version that
// accepts and hands the link to page (in a goroutine of its own). It
// returns the action the tool saw. The call fails the test if it takes
// more than 20 seconds.
func callURLOver(t *testing.T, version string, st store.Store, ttl time.Duration, page func(link string)) string {
	t.Helper()
	e := newEnvOn(t, st, &elicit.Config{TTL: ttl}, newKeyring(t))
	var onPage sync.WaitGroup
	defer onPage.Wait()
	pages := e.callback()
	e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		a, err := elicit.URL(ctx, "Connect", elicit.WithLink(elicit.CallbackURL(pages.URL+"/consent")))
		return string(a), err
	})
	cs := e.connect(&mcp.ClientOptions{
		Capabilities: bothModes,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			onPage.Go(func() { page(req.Params.URL) })
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, version)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

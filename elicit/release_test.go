package elicit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingStore counts live subscriptions.
type countingStore struct {
	store.Store
	live atomic.Int64
}

type countedSub struct {
	store.Subscription
	once sync.Once
	s    *countingStore
}

func (c *countedSub) Close() error {
	c.once.Do(func() { c.s.live.Add(-1) })
	return c.Subscription.Close()
}

func (s *countingStore) Subscribe(ctx context.Context, ch string) (store.Subscription, error) {
	sub, err := s.Store.Subscribe(ctx, ch)
	if err != nil {
		return nil, err
	}
	s.live.Add(1)
	return &countedSub{Subscription: sub, s: s}, nil
}

// Timeouts, supersessions and answers release every subscription and
// goroutine they started. It runs in a synctest bubble, which fails the
// test if any goroutine started in it is left when it ends, and where the
// TTL passes at once.
func TestReleases(t *testing.T) {
	synctest.Test(t, testReleases)
}

func testReleases(t *testing.T) {
	cs := &countingStore{Store: memory.New(nil)}
	defer cs.Close()
	e := newEnvOn(t, cs, &elicit.Config{TTL: 100 * time.Millisecond}, newKeyring(t))
	e.tool("profile", profileTool)
	e.tool("connect", urlTool("http://127.0.0.1:1", elicit.WithURLElicitationRequiredError()))

	func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ct, st := mcp.NewInMemoryTransports()
		ss, err := e.server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		var n atomic.Int32
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			Capabilities: bothModes,
			ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if n.Add(1)%2 == 1 {
					<-ctx.Done() // time out
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: "cancel"}, nil
			},
		})
		cl, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { call(t, cl, "profile") })
		}
		wg.Wait()
		call(t, cl, "connect") // -32042: a watcher waits for the callback until the TTL
		time.Sleep(300 * time.Millisecond)
	}()

	synctest.Wait()
	if n := cs.live.Load(); n != 0 {
		t.Fatalf("%d subscriptions left", n)
	}
	e.assertEmpty()
}

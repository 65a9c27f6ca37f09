package elicit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// opCounter counts the store operations that pass through it.
type opCounter struct {
	store.Store
	mu  sync.Mutex
	ops map[string]int
}

func (c *opCounter) count(op string) {
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
}

func (c *opCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

func (c *opCounter) Put(ctx context.Context, k string, v []byte, e time.Time) error {
	c.count("put")
	return c.Store.Put(ctx, k, v, e)
}
func (c *opCounter) Get(ctx context.Context, k string) ([]byte, error) {
	c.count("get")
	return c.Store.Get(ctx, k)
}
func (c *opCounter) Take(ctx context.Context, k string) ([]byte, error) {
	c.count("take")
	return c.Store.Take(ctx, k)
}
func (c *opCounter) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	c.count("putIfAbsent")
	return c.Store.PutIfAbsent(ctx, k, v, e)
}
func (c *opCounter) Swap(ctx context.Context, k string, v []byte, e time.Time) ([]byte, error) {
	c.count("swap")
	return c.Store.Swap(ctx, k, v, e)
}
func (c *opCounter) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	c.count("compareAndSwap")
	return c.Store.CompareAndSwap(ctx, k, old, v, e)
}
func (c *opCounter) Delete(ctx context.Context, k string) error {
	c.count("delete")
	return c.Store.Delete(ctx, k)
}
func (c *opCounter) Publish(ctx context.Context, ch string, m []byte) error {
	c.count("publish")
	return c.Store.Publish(ctx, ch, m)
}
func (c *opCounter) Subscribe(ctx context.Context, ch string) (store.Subscription, error) {
	c.count("subscribe")
	return c.Store.Subscribe(ctx, ch)
}

func (c *opCounter) total(ops map[string]int) int {
	n := 0
	for _, v := range ops {
		n += v
	}
	return n
}

func formatOps(ops map[string]int) string {
	var parts []string
	for k, v := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// TestStoreOpsPerElicitation counts the store operations of one confirmed
// elicitation on each protocol generation, the figure the performance
// work cuts (each is a round trip to Redis or PostgreSQL). It prints them
// and holds them to the counts of today, so that a change that adds one
// shows here.
func TestStoreOpsPerElicitation(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		max           float64
	}{
		// subscribe, swap (session), delete (result), compare-and-swap
		// (session): a blocking form writes no pending record, since only
		// the client's reply answers it
		{"2025-11-25", legacy, 4},
		// put-if-absent (the requestState's one-shot claim), compare-and-swap
		// (its commit)
		{"2026-07-28", mrtr, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &opCounter{Store: memory.New(nil), ops: map[string]int{}}
			defer c.Close()
			ev, err := elicit.New((*keyring.Keyring)(newKeyring(t)), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			ev.Install(s)
			e := &env{t: t, store: c, ev: ev, server: s}
			e.tool("confirm", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				ok, err := elicit.Confirm(ctx, req, "Delete 3 contacts?")
				return fmt.Sprint(ok), err
			})
			cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("accept", map[string]any{"confirm": true})}, tc.version)
			call(t, cs, "confirm") // warm
			c.take()
			const n = 10
			for range n {
				if got, isErr := call(t, cs, "confirm"); isErr || got != "true" {
					t.Fatalf("got %q (error %v)", got, isErr)
				}
			}
			ops := c.take()
			per := float64(c.total(ops)) / n
			t.Logf("%s: %.1f store operations per elicitation (%s, over %d)", tc.name, per, formatOps(ops), n)
			if per > tc.max {
				t.Errorf("%.1f store operations per elicitation, more than %g", per, tc.max)
			}
		})
	}
}

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/redis"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pendingLoopEnv sets how long TestPendingAcrossNodes loops (a Go
// duration; issue 26 asks for "2m"); 2s by default so that CI stays fast.
// The loop runs longer if it has not yet gone round its cap 20 times.
const pendingLoopEnv = "ELICITVAULT_PENDING_LOOP"

// An LLM-mediated elicitation answered on another node stops counting on
// the node that asked it (issue 26): two Elicitors on one Redis store (and
// on one PostgreSQL schema), 8 anonymous clients in a loop, each asking on
// node 0 and answering on node 1, with a cap of 8 pending on each node, so
// that fewer than the cap are pending whenever a client asks. No call is
// refused, however many times the loop goes round the cap.
func TestPendingAcrossNodes(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		prefix, _ := redisPrefix(t, serverURL(t, redisEnv), "evpending")
		pendingLoop(t, func() store.Store {
			s, err := redis.New(t.Context(), serverURL(t, redisEnv), &redis.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		raw := serverURL(t, postgresEnv)
		ctx := context.Background()
		schema := "evpending_" + randomName()
		pool, err := pgxpool.New(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, &postgres.Options{Schema: schema}); err != nil {
			pool.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
				t.Errorf("dropping the test schema: %v", err)
			}
			pool.Close()
		})
		pendingLoop(t, func() store.Store {
			s, err := postgres.New(ctx, raw, &postgres.Options{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

type pendingProfile struct {
	Name string `json:"name"`
}

func pendingLoop(t *testing.T, open func() store.Store) {
	const clients, limit = 8, 8
	loop := 2 * time.Second
	if v := os.Getenv(pendingLoopEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", pendingLoopEnv, err)
		}
		loop = d
	}
	keys, err := keyring.New([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	var nodes [2]http.Handler
	for i := range nodes {
		// A store client of its own per node, as two processes have.
		ev, err := elicit.New(keys, open(), &elicit.Config{
			Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPending: limit, MaxPendingPerSubject: limit,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ev.Close() })
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		mcp.AddTool(s, &mcp.Tool{Name: "profile"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := elicit.Form[pendingProfile](ctx, req, "Your name?")
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %s", res.Action, res.Content.Name)}}}, nil, nil
		})
		nodes[i] = ev.Handler(s, nil)
	}
	// Answers go to node 1, everything else to node 0.
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		node := 0
		if bytes.Contains(body, []byte(elicit.FallbackTool)) {
			node = 1
		}
		nodes[node].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	var rounds atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(loop)
	for range clients {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: lb.URL + elicit.MCPPath}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		wg.Go(func() {
			for ctx.Err() == nil && (time.Now().Before(deadline) || rounds.Load() < 20*limit) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "profile"})
				var id string
				if err == nil {
					p, _ := res.Meta[elicit.MetaElicitationPending].(map[string]any)
					id, _ = p["elicitId"].(string)
				}
				if id == "" {
					t.Errorf("after %d round trips: %.200s", rounds.Load(), pendingText(res, err))
					cancel()
					return
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{
					"elicitId": id, "action": "accept", "content": map[string]any{"name": "Ann"},
				}})
				if err != nil || res.IsError || pendingText(res, nil) != "accept Ann" {
					t.Errorf("answer after %d round trips: %.200s", rounds.Load(), pendingText(res, err))
					cancel()
					return
				}
				rounds.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d round trips across the nodes in %v, cap %d", rounds.Load(), loop, limit)
}

func pendingText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

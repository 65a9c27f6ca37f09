package elicit_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loopDuration is how long the cross-node loops run: the environment's
// ELICITVAULT_PENDING_LOOP (a Go duration; the check is "2m"), 1s
// by default so that CI stays fast. A loop runs longer if it has not yet
// gone round its cap 20 times.
func loopDuration(t *testing.T) time.Duration {
	if v := os.Getenv("ELICITVAULT_PENDING_LOOP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ELICITVAULT_PENDING_LOOP: %v", err)
		}
		return d
	}
	return time.Second
}

// An elicitation answered on another node stops counting on the node that
// asked it (issue 26): two nodes on one store, 8 anonymous clients in a
// loop, each asking on node 0 and answering on node 1, with a cap of 8
// pending, so at most 8 are ever pending. No call is refused, however many
// times the loop goes round the cap.
func TestPendingAnsweredOnAnotherNode(t *testing.T) {
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	keys := newKeyring(t)
	var nodes [2]http.Handler
	for i := range nodes {
		ev, err := elicit.New((*keyring.Keyring)(keys), st, &elicit.Config{
			Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPending: 8, MaxPendingPerSubject: 8,
		})
		if err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
		ev.Install(s)
		(&env{t: t, server: s}).tool("profile", profileTool)
		nodes[i] = ev.Handler(s, nil)
	}
	lb := answersToSecondNode(t, nodes)
	rounds := loopAcrossNodes(t, lb.URL+elicit.MCPPath, 8, 8)
	t.Logf("%d round trips", rounds)
}

// loopAcrossNodes runs clients anonymous clients at url, each calling
// profile and answering its question, until loopDuration has passed and
// the clients have gone round the cap 20 times; it fails t at the first
// refusal, and returns the number of round trips.
func loopAcrossNodes(t *testing.T, url string, clients, limit int) int64 {
	hc := fromAddr("127.0.0.1", 16)
	var rounds atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(loopDuration(t))
	for range clients {
		cs := connectHTTP(t, url, hc, mute, mrtr)
		wg.Go(func() {
			for ctx.Err() == nil && (time.Now().Before(deadline) || rounds.Load() < int64(20*limit)) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "profile"})
				if err != nil || res.IsError || res.Meta[elicit.MetaElicitationPending] == nil {
					t.Errorf("after %d round trips: %.200q", rounds.Load(), errText(res, err))
					cancel()
					return
				}
				p := pendingOf(t, res)
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{
					"elicitId": p.ID, "action": "accept", "content": map[string]any{"name": "Ann", "email": "ann@example.com"},
				}})
				if err != nil || res.IsError || !strings.HasPrefix(text(res), "accept {Name:Ann") {
					t.Errorf("answer after %d round trips: %.200q", rounds.Load(), errText(res, err))
					cancel()
					return
				}
				rounds.Add(1)
			}
		})
	}
	wg.Wait()
	return rounds.Load()
}

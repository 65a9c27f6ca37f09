package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnonymousPendingMemory sends 1,000 anonymous stateless (2026-07-28)
// calls with 244 KiB of arguments each to a node with the default quotas
// and a memory store, whose records are on the node's heap: an
// LLM-mediated elicitation keeps the call's arguments for the TTL (issue
// 26, Deliver 3). Once from one address, once from 25 addresses (40 calls
// each). The live heap, read with runtime/metrics after a GC, may grow by
// at most the per-client byte budget (DefaultMaxPendingBytesPerSubject,
// 2 MiB) per address, plus 8 MiB: 10 MiB for one address, 58 MiB for 25;
// without the per-client budget the node-wide one (64 MiB) would be all
// that stops them. Every call beyond a client's budget is refused with
// ErrTooManyPending.
//
// It takes a minute (each call's 244 KiB pass the go-sdk's JSON decoding
// and schema validation): it runs with ELICITVAULT_ANON_MEMORY=1, which
// scripts/faults sets. elicit's TestAnonymousPendingBytes, in CI, checks
// the one-address case in-process.
func TestAnonymousPendingMemory(t *testing.T) {
	if os.Getenv("ELICITVAULT_ANON_MEMORY") == "" {
		t.Skip("1,000 calls of 244 KiB, a minute: set ELICITVAULT_ANON_MEMORY=1 (scripts/faults does)")
	}
	keys := keysA(t)
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	ev, err := elicit.New(keys, st, &elicit.Config{
		Fallbacks: []elicit.Fallback{elicit.LLMMediated},
		TTL:       time.Hour,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
	ev.Install(s)
	type blobArgs struct {
		Blob string `json:"blob"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "blob"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ blobArgs) (*mcp.CallToolResult, any, error) {
		if _, err := elicit.Form[pendingProfile](ctx, "Your name?"); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	srv := httptest.NewServer(ev.Handler(s, nil))
	t.Cleanup(srv.Close)
	args := blobArgs{Blob: strings.Repeat("x", 244<<10)}

	for _, clients := range []int{1, 25} {
		t.Run(fmt.Sprintf("%d-clients", clients), func(t *testing.T) {
			before := liveHeap()
			var asked atomic.Int64
			var wg sync.WaitGroup
			for c := range clients {
				addr := fmt.Sprintf("127.0.%d.%d", 10+clients, 1+c)
				cs := anonClient(t, srv.URL+elicit.MCPPath, addr)
				wg.Go(func() {
					for range 1000 / clients {
						res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "blob", Arguments: args})
						switch msg := pendingText(res, err); {
						case err == nil && !res.IsError && res.Meta["elicitationPending"] != nil:
							asked.Add(1)
						case !strings.Contains(msg, elicit.ErrTooManyPending.Error()):
							t.Errorf("client %s: %.200q", addr, msg)
							return
						}
					}
				})
			}
			wg.Wait()
			grown := int64(liveHeap()) - int64(before)
			perClient := int64((2 << 20) /* the default MaxPendingBytesPerSubject */ / (244 << 10))
			bound := int64(clients)*(2<<20) /* the default MaxPendingBytesPerSubject */ + 8<<20
			t.Logf("%d clients: %d of 1,000 calls asked, live heap grew by %.1f MiB (bound %d MiB)",
				clients, asked.Load(), float64(grown)/(1<<20), bound>>20)
			if n := asked.Load(); n < int64(clients) || n > int64(clients)*perClient {
				t.Errorf("%d calls got their question asked; want %d to %d", n, clients, int64(clients)*perClient)
			}
			if grown > bound {
				t.Errorf("the live heap grew by %.1f MiB, want at most %d MiB", float64(grown)/(1<<20), bound>>20)
			}
		})
	}
}

// anonClient connects an anonymous 2026-07-28 client, without
// elicitation, whose connections come from the loopback address local.
func anonClient(t *testing.T, url, local string) *mcp.ClientSession {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		hc.CloseIdleConnections()
	})
	return cs
}

// liveHeap returns the bytes of heap objects live after a GC.
func liveHeap() uint64 {
	runtime.GC()
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

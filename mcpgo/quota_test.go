package mcpgo_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// metaPending is the _meta key of a pending LLM-mediated elicitation in a
// tool call's result.
const metaPending = "elicitationPending"

// quotaServer serves, through the front-end with opts, on an Elicitor
// whose only fallback is LLM-mediated and whose per-client pending quota
// is perClient, three tools that count against a client's quota and
// answer at once: "ask" asks for a contact (elicit.Form: to a client
// without the elicitation capability, a question for the model), "link"
// for a URL-mode elicitation (2026-07-28: an input request with its link),
// "confirm" runs as a task whose body waits for a confirmation, and
// "greet_later" asks for a contact, then continues as a task (StartTask)
// that runs until the Elicitor closes.
func quotaServer(t *testing.T, perClient int, opts *mcpgo.Options) string {
	t.Helper()
	ev, m, f := newFrontEndWith(t, &elicit.Config{
		Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingPerSubject: perClient, BaseURL: "https://mcp.example.com",
	}, opts, server.WithToolCapabilities(false))
	m.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := elicit.Form[contact](ctx, "Who should be added?"); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("answered"), nil
	})
	m.AddTool(mcp.NewTool("link"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := elicit.URL(ctx, "Connect your account")
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(a)), nil
	})
	m.AddTool(mcp.NewTool("confirm"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := elicit.Confirm(ctx, "Proceed?"); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("confirmed"), nil
	})
	m.AddTool(mcp.NewTool("greet_later"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := elicit.Form[contact](ctx, "Who?")
		if err != nil {
			return nil, err
		}
		return mcpgo.StartTask(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			<-ctx.Done() // runs until the Elicitor closes
			return mcp.NewToolResultText("Hello, " + res.Content.Name), nil
		})
	})
	if err := f.RunAsTask("confirm", elicit.TaskOptional); err != nil {
		t.Fatal(err)
	}
	// Listening on 127.0.0.1, reached from other loopback addresses.
	srv := httptest.NewServer(f.Handler(nil))
	t.Cleanup(func() {
		ev.Close()
		srv.Close()
	})
	return srv.URL + elicit.MCPPath
}

// fromAddr is an HTTP client whose connections leave from the local
// address local.
func fromAddr(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// anonymous starts a real mcp-go client of 2026-07-28 without the
// elicitation capability and without a user, with the transport's opts.
func anonymous(t *testing.T, url string, opts ...transport.StreamableHTTPCOption) *mcpclient.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20260728))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "anonymous", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// asked calls "ask" n times from c and returns how many calls got their
// question asked (a pending elicitation for the model); every other call
// must be refused with ErrTooManyPending.
func asked(t *testing.T, c *mcpclient.Client, n int) int {
	t.Helper()
	got := 0
	for range n {
		req := mcp.CallToolRequest{}
		req.Params.Name = "ask"
		res, err := c.CallTool(t.Context(), req)
		switch {
		case err == nil && !res.IsError && res.Meta != nil && res.Meta.AdditionalFields[metaPending] != nil:
			got++
		case err != nil && strings.Contains(err.Error(), elicit.ErrTooManyPending.Error()):
		case err == nil && res.IsError && strings.Contains(resultText(res), elicit.ErrTooManyPending.Error()):
		default:
			t.Fatalf("neither asked nor refused: %+v, %v", res, err)
		}
	}
	return got
}

// Anonymous 2026-07-28 clients on the mcp-go front-end have a pending
// quota each, by address (as on the go-sdk's Handler): client A filling
// its own does not refuse client B, from another address, and A over its
// bound is refused. Without the client's address in the call, every
// anonymous client shares one quota, and B is refused.
func TestAnonymousQuotaPerClientMCPGo(t *testing.T) {
	t.Parallel()
	url := quotaServer(t, 2, nil)
	a := anonymous(t, url, transport.WithHTTPBasicClient(fromAddr("127.0.0.1")))
	if n := asked(t, a, 3); n != 2 {
		t.Errorf("client A got %d questions asked, want 2 (its bound)", n)
	}
	b := anonymous(t, url, transport.WithHTTPBasicClient(fromAddr("127.0.0.2")))
	if n := asked(t, b, 3); n != 2 {
		t.Errorf("client B, from another address, got %d questions asked, want 2", n)
	}
	a2 := anonymous(t, url, transport.WithHTTPBasicClient(fromAddr("127.0.0.1")))
	if n := asked(t, a2, 1); n != 0 {
		t.Errorf("client A on another connection got %d questions asked, want 0", n)
	}
}

// Behind a trusted proxy (Options.TrustedProxies) the clients are told
// apart by the address the proxy forwarded; a client that is not a
// trusted proxy cannot choose its own by writing X-Forwarded-For.
func TestAnonymousQuotaBehindProxyMCPGo(t *testing.T) {
	t.Parallel()
	url := quotaServer(t, 1, &mcpgo.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	via := func(local, forwarded string) *mcpclient.Client {
		return anonymous(t, url, transport.WithHTTPBasicClient(fromAddr(local)),
			transport.WithHTTPHeaders(map[string]string{"X-Forwarded-For": forwarded}))
	}
	if n := asked(t, via("127.0.0.1", "192.0.2.1"), 2); n != 1 {
		t.Errorf("client 192.0.2.1 got %d questions asked, want 1", n)
	}
	if n := asked(t, via("127.0.0.1", "192.0.2.1"), 1); n != 0 {
		t.Errorf("client 192.0.2.1 again got %d questions asked, want 0", n)
	}
	if n := asked(t, via("127.0.0.1", "192.0.2.2"), 1); n != 1 {
		t.Errorf("client 192.0.2.2 got %d questions asked, want 1", n)
	}
	// Not through the proxy: its header is not believed.
	if n := asked(t, via("127.0.0.3", "192.0.2.3"), 2); n != 1 {
		t.Errorf("a client writing X-Forwarded-For itself got %d questions asked, want 1", n)
	}
	if n := asked(t, via("127.0.0.3", "192.0.2.4"), 1); n != 0 {
		t.Errorf("the same client with another X-Forwarded-For got %d questions asked, want 0", n)
	}
}

// Every path that counts against the quota on the mcp-go front-end counts
// an anonymous stateless client by its address, through raw 2026-07-28
// requests (each answers at once: nothing waits for the client): the
// LLM-mediated fallback, a URL-mode input request (its pending record), a
// task (the tasks a client runs at once), and a task started after an
// input round (the call the transport began with the requestState).
// Client A's second call is refused at a bound of 1; client B's first,
// from another address, is not.
func TestAnonymousQuotaEveryPathMCPGo(t *testing.T) {
	t.Parallel()
	form := map[string]any{"form": map[string]any{}}
	tasks := map[string]any{"elicitation": form, "extensions": map[string]any{engine.TasksExtension: map[string]any{}}}
	isTask := func(res map[string]any) bool { return res["resultType"] == "task" }
	for _, tc := range []struct {
		name, tool string
		caps       map[string]any
		asked      func(res map[string]any) bool
		round      bool // answer the call's input request, then read the retry's result
	}{
		{"LLM-mediated", "ask", map[string]any{}, func(res map[string]any) bool {
			meta, _ := res["_meta"].(map[string]any)
			return meta[metaPending] != nil
		}, false},
		{"URL mode", "link", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, func(res map[string]any) bool {
			return res["resultType"] == "input_required"
		}, false},
		{"task", "confirm", tasks, isTask, false},
		{"task after an input round", "greet_later", tasks, isTask, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := quotaServer(t, 1, nil)
			call := func(local string) (bool, string) {
				hc := fromAddr(local)
				params := map[string]any{"name": tc.tool, "arguments": map[string]any{}}
				res, rerr := fronttest.CallFrom(t, hc, url, "", "tools/call", params, tc.caps)
				if rerr == nil && tc.round {
					reqs, _ := res["inputRequests"].(map[string]any)
					if len(reqs) != 1 {
						t.Fatalf("no input request: %.300v", res)
					}
					params["requestState"] = res["requestState"]
					params["inputResponses"] = map[string]any{}
					for key := range reqs {
						params["inputResponses"] = map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "email": "ada@example.com"}}}
					}
					res, rerr = fronttest.CallFrom(t, hc, url, "", "tools/call", params, tc.caps)
				}
				if rerr != nil {
					return false, rerr.Message
				}
				if tc.asked(res) {
					return true, ""
				}
				return false, fmt.Sprint(res)
			}
			refused := func(msg string) bool { return strings.Contains(msg, elicit.ErrTooManyPending.Error()) }
			if ok, msg := call("127.0.0.1"); !ok {
				t.Fatalf("client A's first call: %.300s", msg)
			}
			if ok, msg := call("127.0.0.1"); ok || !refused(msg) {
				t.Errorf("client A over its bound: asked %v, %.300s; want refused", ok, msg)
			}
			if ok, msg := call("127.0.0.2"); !ok {
				t.Errorf("client B, from another address: %.300s", msg)
			}
		})
	}
}

package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// downTakes is a store whose Take fails while down is set: a primary that
// died, before its replica is promoted.
type downTakes struct {
	store.Store
	down  atomic.Bool
	fails atomic.Int32
}

var errDown = errors.New("connection refused")

func (d *downTakes) Take(ctx context.Context, key string) ([]byte, error) {
	if d.down.Load() {
		d.fails.Add(1)
		return nil, errDown
	}
	return d.Store.Take(ctx, key)
}

// A URL-mode answer written while the store then stops answering the
// waiter's reads (a failover) is not lost: the waiter tries again until
// the store answers, within the TTL, and the call gets the answer. Before,
// the first failed read failed the call although the answer was safe.
func TestWaitRidesOutStoreFailure(t *testing.T) {
	for _, version := range []string{legacy, "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			st := &downTakes{Store: memory.New(nil)}
			t.Cleanup(func() { st.Close() })
			keys, err := keyring.New([]byte("failover test secret, thirty-two bytes"))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := elicit.New(keys, st, &elicit.Config{TTL: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			pages := httptest.NewServer(ev.Pages(nil))
			defer pages.Close()
			s := mcp.NewServer(&mcp.Implementation{Name: "failover", Version: "1"}, nil)
			ev.Install(s)
			mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				a, err := elicit.URL(ctx, req, "Connect", elicit.WithLink(elicit.CallbackURL(pages.URL+"/consent")))
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(a)}}}, nil, nil
			})
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				Capabilities: bothModes,
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					go func() {
						st.down.Store(true) // the store fails the waiter's reads from now
						resp, err := http.PostForm(req.Params.URL, url.Values{"action": {"accept"}})
						if err != nil || resp.StatusCode != http.StatusOK {
							t.Errorf("page: %v %v", resp, err)
							return
						}
						resp.Body.Close()
						time.Sleep(300 * time.Millisecond)
						st.down.Store(false) // the replica is promoted
					}()
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			ct, stt := mcp.NewInMemoryTransports()
			ss, err := s.Connect(t.Context(), stt, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "connect"})
			if err != nil || res.IsError {
				t.Fatalf("%v %v", res, err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "accept" {
				t.Fatalf("got %q", got)
			}
			if st.fails.Load() == 0 {
				t.Fatal("the store never failed a read: the test tested nothing")
			}
		})
	}
}

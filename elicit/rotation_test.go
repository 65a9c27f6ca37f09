package elicit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mid-rotation the waiting node still has OLD as its primary and the node
// serving the callback already NEW, while rotate moves records: the
// answer reaches the waiter (announced where it listens, read where it
// was written), on both paths.
func TestURLAnswerDuringRotation(t *testing.T) {
	oldSecret := []byte("rotation test secret OLD, thirty-two bytes")
	newSecret := []byte("rotation test secret NEW, thirty-two bytes")
	forBoth(t, func(t *testing.T, version string) {
		st := memory.New(nil)
		t.Cleanup(func() { st.Close() })
		waiterKeys := mustRing(ring.New(oldSecret, [][]byte{newSecret}))
		resolverKeys := mustRing(ring.New(newSecret, [][]byte{oldSecret}))
		ev, err := elicit.New((*keyring.Keyring)(waiterKeys), st, &elicit.Config{TTL: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		ev.Install(s)
		e := &env{t: t, store: st, keys: waiterKeys, ev: ev, server: s}
		other, err := elicit.New((*keyring.Keyring)(resolverKeys), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		// rotate runs in a loop meanwhile.
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				resolverKeys.Rewrap(ctx, st, ring.RewrapOptions{})
				time.Sleep(time.Millisecond)
			}
		}()
		t.Cleanup(func() { stop(); <-done })
		srv := httptest.NewServer(other.Pages(nil))
		t.Cleanup(srv.Close)
		e.tool("connect", urlTool(srv.URL))
		for range 5 {
			c := newURLClient(t, false)
			cs := e.connect(c.options(), version)
			if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
				t.Fatalf("got %q", got)
			}
			if s := <-c.status; s != http.StatusOK {
				t.Errorf("callback status %d", s)
			}
		}
	})
}

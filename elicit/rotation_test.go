package elicit_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
)

// Mid-rotation the waiting node still has OLD as its primary and the node
// serving the callback already NEW, while rotate moves records: the
// answer reaches the waiter (announced where it listens, read where it
// was written), on both paths.
func TestURLAnswerDuringRotation(t *testing.T) {
	oldSecret := []byte("rotation test secret OLD, thirty-two bytes")
	newSecret := []byte("rotation test secret NEW, thirty-two bytes")
	forBoth(t, func(t *testing.T, version string) {
		waiterKeys := mustRing(ring.New(oldSecret, [][]byte{newSecret}))
		resolverKeys := mustRing(ring.New(newSecret, [][]byte{oldSecret}))
		e := newEnvWithKeys(t, &elicit.Config{TTL: 3 * time.Second}, waiterKeys)
		st := e.store
		e.otherNode(resolverKeys, nil)
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
		for range 5 {
			if s := e.acceptURL(version); s != http.StatusOK {
				t.Errorf("callback status %d", s)
			}
		}
	})
}

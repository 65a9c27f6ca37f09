package elicit_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// A rolling secret removal: the question was asked under OLD, the store
// was rewrapped to NEW, and node 1 already dropped OLD. Concurrent answers
// on node 0 (NEW, OLD) and node 1 (NEW only) continue the tool once: node
// 1 cannot key the one-shot marker where node 0 does, so it refuses
// (ErrSecretUnavailable) instead of keying it under its own primary.
func TestModelMarkerSecretMissing(t *testing.T) {
	st := &slowMarkers{memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	oldSecret := []byte("rotation test secret OLD, thirty-two bytes")
	newSecret := []byte("rotation test secret NEW, thirty-two bytes")
	asker, err := ring.New(oldSecret, [][]byte{newSecret})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	clients := profileNodes(t, st, &runs, mustRing(ring.New(newSecret, [][]byte{oldSecret})), mustRing(ring.New(newSecret, nil)), asker)
	p := pendingOf(t, callTool(t, clients[2], "profile", nil))
	// rotate: the pending record moves under NEW; its marker key ID stays.
	if _, err := mustRing(ring.New(newSecret, [][]byte{oldSecret})).Rewrap(context.Background(), st, ring.RewrapOptions{}); err != nil {
		t.Fatal(err)
	}
	// Node 1 refuses, and uses nothing up.
	for range 2 {
		res := submit(t, clients[1], p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
		if !res.IsError || !strings.Contains(text(res), elicit.ErrSecretUnavailable.Error()) {
			t.Fatalf("node without the secret: %q (error %v)", text(res), res.IsError)
		}
	}
	// Concurrent answers on both nodes: one continues the tool, on node 0.
	continued := answerOnBoth(t, clients, p.ID)
	if slices.Contains(continued, 1) {
		t.Errorf("node 1 continued the tool")
	}
	continuedOnce(t, continued, &runs)
}

func mustRing[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

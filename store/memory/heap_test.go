//go:build !race

package memory_test

import (
	"crypto/rand"
	"encoding/base64"
	"runtime"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store/memory"
)

// TestMillionPendingHeap measures the heap that a million pending entries
// take, sized like elicitvault's: 43-character keys and 512-byte values.
func TestMillionPendingHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: writes a million entries")
	}
	const (
		n     = 1_000_000
		limit = 1200 << 20 // 1.2 GiB
	)
	ctx := t.Context()
	before := heapAlloc()

	s := memory.New(nil)
	defer s.Close()
	// The store copies values, so one buffer serves every write. Keys are
	// kept by the store, so each is a fresh string, as a caller's would be.
	value := make([]byte, 512)
	raw := make([]byte, 32)
	expiry := time.Now().Add(5 * time.Minute)
	for range n {
		rand.Read(raw)
		if err := s.Put(ctx, base64.RawURLEncoding.EncodeToString(raw), value, expiry); err != nil {
			t.Fatal(err)
		}
	}

	used := int64(heapAlloc()) - int64(before)
	runtime.KeepAlive(s)
	t.Logf("%d entries: %d MiB of heap, %d bytes per entry", n, used>>20, used/n)
	if used > limit {
		t.Errorf("%d entries take %d MiB of heap, more than %d MiB", n, used>>20, limit>>20)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

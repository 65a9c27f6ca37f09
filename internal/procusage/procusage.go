// Package procusage measures what this process holds (goroutines, heap,
// resident memory), for the tests that bound what a client can make a
// server keep.
package procusage

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Usage is what the process holds.
type Usage struct {
	Goroutines int
	Heap       uint64 // in use after a GC
	RSS        uint64 // resident memory, where /proc tells it
}

// Measure returns what the process holds now, after a GC.
func Measure() Usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := Usage{Goroutines: runtime.NumGoroutine(), Heap: ms.HeapInuse}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				u.RSS = kb << 10
			}
		}
	}
	return u
}

// Limits bound how much more than a baseline the process may hold.
type Limits struct {
	Goroutines int
	HeapMiB    uint64
	RSSMiB     uint64
}

// Check measures the process until it holds at most lim.Goroutines more
// goroutines than base (what ends in the background gets 10 seconds),
// logs what it holds above base after what (such as "100 sessions
// opened and abandoned in 2s"), and fails t for each bound of lim it
// exceeds.
func Check(t testing.TB, what string, base Usage, lim Limits) {
	t.Helper()
	maxGoroutines := base.Goroutines + lim.Goroutines
	var after Usage
	for deadline := time.Now().Add(10 * time.Second); ; {
		after = Measure()
		if after.Goroutines <= maxGoroutines || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s; above baseline: %d goroutines (baseline %d), heap %+.1f MiB, RSS %+.1f MiB (baseline %.1f MiB)",
		what, after.Goroutines-base.Goroutines, base.Goroutines,
		mib(after.Heap)-mib(base.Heap), mib(after.RSS)-mib(base.RSS), mib(base.RSS))
	if after.Goroutines > maxGoroutines {
		t.Errorf("%d goroutines above baseline, want at most %d", after.Goroutines-base.Goroutines, lim.Goroutines)
	}
	if after.Heap > base.Heap+lim.HeapMiB<<20 {
		t.Errorf("heap grew by %.1f MiB, want at most %d", mib(after.Heap-base.Heap), lim.HeapMiB)
	}
	if after.RSS > base.RSS+lim.RSSMiB<<20 {
		t.Errorf("RSS grew by %.1f MiB, want at most %d", mib(after.RSS-base.RSS), lim.RSSMiB)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

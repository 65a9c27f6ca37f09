package bench

import (
	"os"
	"testing"
)

// ratioEnv, set to 1, runs the Test*Ratios tests. scripts/bench sets it;
// scripts/test does not, so that a speed measurement, which a loaded
// machine can push over its bound, never decides whether the tests pass.
// scripts/test runs every benchmark once instead (-benchtime 1x), so that
// they still compile and run.
const ratioEnv = "ELICITVAULT_BENCH_RATIOS"

// measuring skips t unless this run is for the measurements: ratioEnv=1,
// no -short and no race detector (which would measure itself).
func measuring(t *testing.T) {
	t.Helper()
	if os.Getenv(ratioEnv) != "1" {
		t.Skip("a speed measurement: scripts/bench runs it (" + ratioEnv + "=1)")
	}
	if testing.Short() || raceEnabled() {
		t.Skip("measurements need a build without -race and without -short")
	}
}

// bestOf3 runs each of cases with testing.Benchmark three times, in turn,
// and returns the best (lowest) ns/op of each.
func bestOf3(t *testing.T, cases []func(*testing.B)) []float64 {
	t.Helper()
	best := make([]float64, len(cases))
	for range 3 {
		for i, fn := range cases {
			r := testing.Benchmark(fn)
			if r.N == 0 {
				t.Fatal("benchmark failed")
			}
			if ns := float64(r.T.Nanoseconds()) / float64(r.N); best[i] == 0 || ns < best[i] {
				best[i] = ns
			}
		}
	}
	return best
}

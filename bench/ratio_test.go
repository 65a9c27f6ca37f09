//go:build !race

// The race detector slows code by a factor that depends on the code, so
// ratios measured under it mean nothing: this file is left out of -race
// builds.

package bench

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

const (
	// ratioRuns is how many times each benchmark is measured; the best
	// (lowest) run counts.
	ratioRuns = 3
	// ratioSlices is how many slices a run is cut into: the benchmarks of
	// a run take turns slice by slice, so that a burst of load from
	// elsewhere on the machine (they come and go within milliseconds)
	// falls on all of them alike instead of on whichever ran then.
	ratioSlices = 8
	// ratioSlice is about how long one benchmark runs in one slice.
	ratioSlice = 50 * time.Millisecond
)

// contender is a benchmark measured against a baseline.
type contender struct {
	name  string
	bench func(*testing.B)
	limit float64 // the largest ratio to the baseline allowed
}

// measureRatios measures the baseline and the contenders ratioRuns times
// with testing.Benchmark, interleaved slice by slice, and returns the best
// ns/op of each: the baseline's, and the contenders' in order.
func measureRatios(t *testing.T, baseline func(*testing.B), contenders []contender) (base float64, best []float64) {
	t.Helper()
	benches := []func(*testing.B){baseline}
	for _, c := range contenders {
		benches = append(benches, c.bench)
	}
	// testing.Benchmark runs each benchmark for -test.benchtime: a slice.
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set(ratioSlice.String()); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)

	bests := make([]float64, len(benches))
	for run := range ratioRuns {
		ns := make([]time.Duration, len(benches))
		ops := make([]int, len(benches))
		for slice := range ratioSlices {
			for i := range benches {
				j := (i + slice) % len(benches) // every benchmark goes first in turn
				r := testing.Benchmark(benches[j])
				if r.N == 0 {
					t.Fatal("a benchmark failed")
				}
				ns[j] += r.T
				ops[j] += r.N
			}
		}
		for i := range benches {
			perOp := float64(ns[i].Nanoseconds()) / float64(ops[i])
			if run == 0 || perOp < bests[i] {
				bests[i] = perOp
			}
		}
	}
	return bests[0], bests[1:]
}

// ratioAttempts is how many measurements a ratio over its limit gets in
// all before the test fails: a regression shows in every measurement, a
// burst of load on the machine in one.
const ratioAttempts = 3

// TestEnvelopeRatios checks the design's bounds for the envelope: sealing
// and opening 512 bytes costs at most 1.2 times raw AES-256-GCM with the
// session key cached (warm), and at most 5 times with a new session each
// time (cold: HKDF and the AES key setup every time).
func TestEnvelopeRatios(t *testing.T) {
	measuring(t)
	contenders := []contender{
		{"warm", benchWarm, 1.2},
		{"cold", benchCold, 5},
	}
	for attempt := 1; ; attempt++ {
		base, best := measureRatios(t, benchRawGCM, contenders)
		var msgs []string
		over := false
		for i, c := range contenders {
			ratio := best[i] / base
			msgs = append(msgs, fmt.Sprintf("%-4s %7.1f ns/op, %.2f × raw-gcm (limit %.1f)", c.name, best[i], ratio, c.limit))
			over = over || ratio > c.limit
		}
		t.Logf("raw-gcm %7.1f ns/op (best of %d runs)", base, ratioRuns)
		for _, m := range msgs {
			t.Log(m)
		}
		if !over {
			return
		}
		if attempt == ratioAttempts {
			t.Fatalf("over the limit in %d measurements", attempt)
		}
		t.Logf("over the limit: measuring again (%d of %d)", attempt+1, ratioAttempts)
	}
}

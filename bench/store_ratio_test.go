//go:build !race

// The race detector slows code by a factor that depends on the code, so
// ratios measured under it mean nothing: this file is left out of -race
// builds.

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// storeRatioRounds is how many runs of each operation the ratio tests
// make; the best run of each side counts.
const storeRatioRounds = 5

// storeRatioRun is about how long one run of one operation lasts.
const storeRatioRun = 150 * time.Millisecond

// storeRatioKept is the share of each side's calls a run counts: the
// fastest ones. The slowest tenth are load spikes: a write's fsync queued
// behind other work on the disk, a descheduled process.
const storeRatioKept = 0.9

// measureStoreOp runs op's raw and store sides storeRatioRounds times and
// returns the best time per operation of each.
//
// The sides are interleaved call by call, not run after run: on a machine
// shared with other work, load comes in bursts of milliseconds, which a
// run-by-run comparison of operations lasting microseconds would charge to
// whichever side ran then. Here each call of one side has a call of the
// other next to it, in alternating order, and the iterations are numbered
// in the order they run, so that alternating operations (CompareAndSwap,
// Swap) and fresh keys (Take, PutIfAbsent) work as in the benchmarks. A
// run's time per operation for a side is the mean of its fastest calls
// (storeRatioKept).
func measureStoreOp(t *testing.T, op storeOp) (raw, viaStore float64) {
	t.Helper()
	ctx := context.Background()
	run := func(n int) (raw, viaStore float64) {
		if op.setup != nil {
			op.setup(t, 2*n)
		}
		rawCalls := make([]time.Duration, 0, n)
		storeCalls := make([]time.Duration, 0, n)
		for k := range n {
			first, second := op.raw, op.viaStore
			if k%2 == 1 {
				first, second = second, first
			}
			t0 := time.Now()
			if err := first(ctx, 2*k); err != nil {
				t.Fatalf("%s: %v", op.name, err)
			}
			t1 := time.Now()
			if err := second(ctx, 2*k+1); err != nil {
				t.Fatalf("%s: %v", op.name, err)
			}
			t2 := time.Now()
			if k%2 == 0 {
				rawCalls, storeCalls = append(rawCalls, t1.Sub(t0)), append(storeCalls, t2.Sub(t1))
			} else {
				storeCalls, rawCalls = append(storeCalls, t1.Sub(t0)), append(rawCalls, t2.Sub(t1))
			}
		}
		return fastMean(rawCalls), fastMean(storeCalls)
	}
	// Size the runs: about storeRatioRun each.
	r, s := run(20)
	n := int(float64(storeRatioRun) / (r + s))
	n = min(max(n, 100), 50000)
	for round := range storeRatioRounds {
		r, s := run(n)
		if round == 0 || r < raw {
			raw = r
		}
		if round == 0 || s < viaStore {
			viaStore = s
		}
	}
	return raw, viaStore
}

// fastMean returns the mean of the fastest storeRatioKept of calls, in
// nanoseconds.
func fastMean(calls []time.Duration) float64 {
	slices.Sort(calls)
	kept := calls[:max(1, int(float64(len(calls))*storeRatioKept))]
	var sum time.Duration
	for _, d := range kept {
		sum += d
	}
	return float64(sum.Nanoseconds()) / float64(len(kept))
}

// storeRatioAttempts is how many times an operation whose ratio is over
// the limit is measured in all before the test fails: a regression shows in
// every measurement, a burst of load on the machine or the server in one.
const storeRatioAttempts = 3

// checkStoreRatios fails t for every operation whose store side costs more
// than limit times its raw side.
func checkStoreRatios(t *testing.T, ops []storeOp, limit float64) {
	t.Helper()
	for _, op := range ops {
		for attempt := 1; ; attempt++ {
			raw, viaStore := measureStoreOp(t, op)
			ratio := viaStore / raw
			msg := fmt.Sprintf("%-14s store %7.1f µs/op, raw %7.1f µs/op: %.2f × raw (limit %.1f, best of %d)",
				op.name, viaStore/1e3, raw/1e3, ratio, limit, storeRatioRounds)
			if ratio <= limit {
				t.Log(msg)
				break
			}
			if attempt == storeRatioAttempts {
				t.Errorf("%s: too slow, in %d measurements", msg, attempt)
				break
			}
			t.Logf("%s: over the limit; measuring again", msg)
		}
	}
}

// TestRedisRatios checks the design's bound for Redis: each operation
// through the store costs at most 1.1 times the raw go-redis commands it
// needs, on the same client.
func TestRedisRatios(t *testing.T) {
	measuring(t)
	url := backendURL(t, redisURLEnv, true)
	checkStoreRatios(t, redisOps(t, url), 1.1)
}

// TestPostgresRatios checks the design's bound for PostgreSQL: each
// operation through the store costs at most 1.1 times the raw pgx
// statements it needs, on the same pool.
func TestPostgresRatios(t *testing.T) {
	measuring(t)
	url := backendURL(t, postgresURLEnv, true)
	checkStoreRatios(t, postgresOps(t, url), 1.1)
}

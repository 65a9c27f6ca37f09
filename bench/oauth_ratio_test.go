//go:build !race

package bench

import (
	"os"
	"testing"
)

// TestVaultReadRatio measures a vault read (a sealed OAuth credential read
// from Redis, opened and turned into a token source that returns its
// access token) beside a raw store Get of the same record, and prints the
// ratio. The design's bound, 1.3 ×, is asserted only when
// ELICITVAULT_BENCH_ASSERT=1 (the benchmark command), not in CI's run.
func TestVaultReadRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for about a second; skipped with -short")
	}
	op := vaultOp(t, backendURL(t, redisURLEnv, true))
	if os.Getenv("ELICITVAULT_BENCH_ASSERT") == "1" {
		checkStoreRatios(t, []storeOp{op}, 1.3)
		return
	}
	raw, via := measureStoreOp(t, op)
	t.Logf("VaultRead      vault %7.1f µs/op, raw Get %7.1f µs/op: %.2f × raw (bound 1.3, asserted with ELICITVAULT_BENCH_ASSERT=1)", via/1e3, raw/1e3, via/raw)
}

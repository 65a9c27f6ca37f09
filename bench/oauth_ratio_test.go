//go:build !race

package bench

import "testing"

// TestVaultReadRatios checks the design's bound for the OAuth vault of
// elicit/oauth: a vault read (a sealed credential read from Redis, opened
// and turned into a token source that returns its access token) costs at
// most 1.3 times a raw store Get of the same record.
func TestVaultReadRatios(t *testing.T) {
	measuring(t)
	checkStoreRatios(t, []storeOp{vaultOp(t, backendURL(t, redisURLEnv, true))}, 1.3)
}

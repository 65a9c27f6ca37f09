package bench

import (
	"testing"

	"github.com/elicitvault/elicitvault/store"
)

// The redis sub-benchmark of BenchmarkElicit, over a key prefix of its own
// (see redis_test.go).
func init() {
	elicitRedisStore = func(b *testing.B) store.Store {
		url := backendURL(b, redisURLEnv, false)
		return newRedisStore(b, url, benchPrefix(b, url))
	}
}

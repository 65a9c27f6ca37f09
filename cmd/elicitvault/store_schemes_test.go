package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRedisTopologySchemes checks that --store takes the Redis Cluster and
// Sentinel URLs of store/redis: with nothing listening they fail as a
// server that does not answer, not as an unknown scheme.
func TestRedisTopologySchemes(t *testing.T) {
	for _, u := range []string{
		"redis+cluster://127.0.0.1:1,127.0.0.1:2/?max_retries=-1&dial_timeout=200ms&prefix=x:",
		"redis+sentinel://127.0.0.1:1/0?master=m&max_retries=-1&dial_timeout=200ms",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		s, err := openStore(ctx, u)
		cancel()
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened with nothing listening", u)
		}
		if strings.Contains(err.Error(), "scheme") || !strings.Contains(err.Error(), "answer") {
			t.Errorf("%s: %v, want a server that does not answer", u, err)
		}
	}
}

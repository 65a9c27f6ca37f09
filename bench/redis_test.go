package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
)

// BenchmarkRedis measures every store operation on Redis beside the raw
// go-redis commands it needs (see store/redis's README for which), on one
// client, and the throughput of full round trips between two stores.
//
//	ELICITVAULT_REDIS_URL=redis://127.0.0.1:6379/0 go test -run XXX -bench Redis ./bench
func BenchmarkRedis(b *testing.B) {
	url := backendURL(b, redisURLEnv, false)
	benchOps(b, redisOps(b, url))
	b.Run("RoundTrip", func(b *testing.B) {
		prefix := benchPrefix(b, url)
		waiter := newRedisStore(b, url, prefix)
		resolver := newRedisStore(b, url, prefix)
		benchRoundTrips(b, waiter, resolver)
	})
}

// benchPrefix returns a key prefix of its own for tb, whose keys are
// deleted when tb ends.
func benchPrefix(tb testing.TB, url string) string {
	prefix := "evbench-" + storeKey()[:12] + ":"
	tb.Cleanup(func() {
		c := newRedisClient(tb, url)
		defer c.Close()
		ctx := context.Background()
		pattern := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(prefix) + "*"
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
			if len(keys) == 1000 {
				c.Unlink(ctx, keys...)
				keys = keys[:0]
			}
		}
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
	})
	return prefix
}

func newRedisClient(tb testing.TB, url string) *redis.Client {
	o, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("%s: %v", redisURLEnv, err)
	}
	return redis.NewClient(o)
}

// newRedisStore returns a store with a client of its own.
func newRedisStore(tb testing.TB, url, prefix string) *store.Portable {
	s, err := evredis.New(context.Background(), url, &evredis.Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// redisCAS is the compare-and-swap script the store runs, for the raw
// side.
var redisCAS = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
return 1
`)

// redisTake is the take script the store runs (see store/redis's Take),
// for the raw side: a receipt that a retry of the same call reads.
var redisTake = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
	local at = redis.call('PEXPIRETIME', KEYS[1])
	redis.call('DEL', KEYS[1])
	local keep = tonumber(ARGV[1])
	if at > 0 and at < keep then keep = at end
	redis.call('SET', KEYS[2], v, 'PXAT', keep)
	return v
end
return redis.call('GET', KEYS[2])
`)

// redisOps returns the operations of a store and of the raw commands on
// one go-redis client, with the same keys (the store adds its prefix and
// hash tag; the raw side is given the whole Redis key).
func redisOps(tb testing.TB, url string) []storeOp {
	prefix := benchPrefix(tb, url)
	client := newRedisClient(tb, url)
	tb.Cleanup(func() { client.Close() })
	s, err := evredis.NewFromClient(client, &evredis.Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := client.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("Redis: %v", err)
	}
	rk := func(key string) string { return prefix + "{" + key + "}" }
	v0, v1 := storeValues()
	expiry := benchExpiry()
	ctx := context.Background()

	key := storeKey()
	rkey := rk(key)
	channel := storeKey()
	rchannel := rk(channel)
	// fresh holds the keys of one run: each iteration of Take and
	// PutIfAbsent has a key of its own.
	var fresh, rfresh []string
	newKeys := func(tb testing.TB, n int) {
		fresh = storeKeys(n)
		rfresh = make([]string, n)
		for i, k := range fresh {
			rfresh[i] = rk(k)
		}
	}
	mustPut := func(tb testing.TB) {
		if err := client.Set(ctx, rkey, v0, time.Until(expiry)).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	alternate := func(i int) (old, value []byte) {
		if i%2 == 0 {
			return v0, v1
		}
		return v1, v0
	}
	return []storeOp{
		{
			name:     "Put",
			viaStore: func(ctx context.Context, i int) error { return s.Put(ctx, key, v0, expiry) },
			raw: func(ctx context.Context, i int) error {
				return client.SetArgs(ctx, rkey, v0, redis.SetArgs{ExpireAt: expiry}).Err()
			},
		},
		{
			name:  "Get",
			setup: func(tb testing.TB, n int) { mustPut(tb) },
			viaStore: func(ctx context.Context, i int) error {
				_, err := s.Get(ctx, key)
				return err
			},
			raw: func(ctx context.Context, i int) error {
				_, err := client.Get(ctx, rkey).Bytes()
				return err
			},
		},
		{
			name: "Take",
			setup: func(tb testing.TB, n int) {
				newKeys(tb, n)
				for start := 0; start < n; start += 1000 {
					_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
						for _, k := range rfresh[start:min(start+1000, n)] {
							p.SetArgs(ctx, k, v0, redis.SetArgs{ExpireAt: expiry})
						}
						return nil
					})
					if err != nil {
						tb.Fatal(err)
					}
				}
			},
			viaStore: func(ctx context.Context, i int) error {
				_, err := s.Take(ctx, fresh[i])
				return err
			},
			raw: func(ctx context.Context, i int) error {
				var nonce [12]byte
				rand.Read(nonce[:])
				keys := []string{rfresh[i], rfresh[i] + "~take:" + base64.RawURLEncoding.EncodeToString(nonce[:])}
				_, err := redisTake.Run(ctx, client, keys, time.Now().Add(30*time.Second).UnixMilli()).Text()
				return err
			},
		},
		{
			name:  "PutIfAbsent",
			setup: newKeys,
			viaStore: func(ctx context.Context, i int) error {
				ok, err := s.PutIfAbsent(ctx, fresh[i], v0, expiry)
				if err == nil && !ok {
					err = errors.New("not written")
				}
				return err
			},
			raw: func(ctx context.Context, i int) error {
				err := client.SetArgs(ctx, rfresh[i], v0, redis.SetArgs{Mode: "NX", ExpireAt: expiry}).Err()
				if err == redis.Nil {
					err = errors.New("not written")
				}
				return err
			},
		},
		{
			name: "Swap",
			viaStore: func(ctx context.Context, i int) error {
				_, value := alternate(i)
				_, err := s.Swap(ctx, key, value, expiry)
				return err
			},
			raw: func(ctx context.Context, i int) error {
				_, value := alternate(i)
				_, err := client.SetArgs(ctx, rkey, value, redis.SetArgs{ExpireAt: expiry, Get: true}).Bytes()
				if err == redis.Nil {
					err = nil
				}
				return err
			},
		},
		{
			name:  "CompareAndSwap",
			setup: func(tb testing.TB, n int) { mustPut(tb) },
			viaStore: func(ctx context.Context, i int) error {
				old, value := alternate(i)
				ok, err := s.CompareAndSwap(ctx, key, old, value, expiry)
				if err == nil && !ok {
					err = errors.New("no swap")
				}
				return err
			},
			raw: func(ctx context.Context, i int) error {
				old, value := alternate(i)
				n, err := redisCAS.Run(ctx, client, []string{rkey}, old, value, expiry.UnixMilli()).Int64()
				if err == nil && n != 1 {
					err = errors.New("no swap")
				}
				return err
			},
		},
		{
			name:     "Publish",
			viaStore: func(ctx context.Context, i int) error { return s.Publish(ctx, channel, v0) },
			raw:      func(ctx context.Context, i int) error { return client.Publish(ctx, rchannel, v0).Err() },
		},
	}
}

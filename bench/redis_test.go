package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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
	benchBackend(b, redisURLEnv, redisOps, benchPrefix, newRedisStore)
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
func newRedisStore(tb testing.TB, url, prefix string) store.Store {
	s, err := evredis.New(context.Background(), url, &evredis.Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// redisPutIfAbsentGet is the put-if-absent-and-get script the store runs,
// for the raw side.
var redisPutIfAbsentGet = redis.NewScript(`
local set = redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2], 'NX')
local v = redis.call('GET', KEYS[2])
if set then return {1, v} end
return {0, v}
`)

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
	channel := storeKey()
	rchannel := rk(channel)
	return storeOps(s, channel, rawStore[string]{
		key: rk,
		put: func(ctx context.Context, key string, value []byte, expiry time.Time) error {
			return client.SetArgs(ctx, key, value, redis.SetArgs{ExpireAt: expiry}).Err()
		},
		get: func(ctx context.Context, key string) error { return client.Get(ctx, key).Err() },
		putMany: func(tb testing.TB, keys []string, value []byte, expiry time.Time) {
			ctx := context.Background()
			for start := 0; start < len(keys); start += 1000 {
				_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys[start:min(start+1000, len(keys))] {
						p.SetArgs(ctx, k, value, redis.SetArgs{ExpireAt: expiry})
					}
					return nil
				})
				if err != nil {
					tb.Fatal(err)
				}
			}
		},
		take: func(ctx context.Context, key string) error {
			var nonce [12]byte
			rand.Read(nonce[:])
			keys := []string{key, key + "~take:" + base64.RawURLEncoding.EncodeToString(nonce[:])}
			return redisTake.Run(ctx, client, keys, time.Now().Add(30*time.Second).UnixMilli()).Err()
		},
		putIfAbsent: func(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
			err := client.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", ExpireAt: expiry}).Err()
			if err == redis.Nil {
				return false, nil
			}
			return err == nil, err
		},
		putIfAbsentGet: func(ctx context.Context, key, other string, value []byte, expiry time.Time) (bool, error) {
			r, err := redisPutIfAbsentGet.Run(ctx, client, []string{key, other}, value, expiry.UnixMilli()).Slice()
			if err != nil {
				return false, err
			}
			return r[0] == int64(1), nil
		},
		swap: func(ctx context.Context, key string, value []byte, expiry time.Time) error {
			err := client.SetArgs(ctx, key, value, redis.SetArgs{ExpireAt: expiry, Get: true}).Err()
			if err == redis.Nil {
				err = nil
			}
			return err
		},
		cas: func(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
			n, err := redisCAS.Run(ctx, client, []string{key}, old, value, expiry.UnixMilli()).Int64()
			return n == 1, err
		},
		publish: func(ctx context.Context, value []byte) error { return client.Publish(ctx, rchannel, value).Err() },
	})
}

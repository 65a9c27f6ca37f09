package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// randomName returns a name no other test uses.
func randomName(kind string) string {
	b := make([]byte, 8)
	rand.Read(b) // never fails
	return "evtest-" + kind + "-" + hex.EncodeToString(b)
}

// withClientName returns rawURL with its client_name parameter set, so
// that the store's connections can be found in CLIENT LIST.
func withClientName(t testing.TB, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("test server URL: %v", err)
	}
	q := u.Query()
	q.Set("client_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// serverURL returns the test server's URL, from ELICITVAULT_REDIS_URL, or
// skips t (see storetest.Skip).
func serverURL(t testing.TB) string {
	t.Helper()
	return storetest.ServerURL(t, "ELICITVAULT_REDIS_URL", "Redis")
}

// admin returns a client of the test server, closed when t ends.
func admin(t testing.TB, rawURL string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("test server URL: %v", err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// openStore opens a store with the given prefix (a random one when none is
// given) and, unless the URL sets one, a random client name. When t ends
// it closes the store and deletes every key under the prefix.
func openStore(t testing.TB, rawURL string, prefixes ...string) (store.Store, string) {
	t.Helper()
	prefix := randomName("prefix") + ":"
	if len(prefixes) > 0 {
		prefix = prefixes[0]
	}
	s, err := evredis.New(t.Context(), rawURL, &evredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { deletePrefix(t, rawURL, prefix) })
	storetest.CloseAtEnd(t, s)
	return s, prefix
}

// deletePrefix deletes every key that starts with prefix.
func deletePrefix(t testing.TB, rawURL, prefix string) {
	t.Helper()
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Errorf("test server URL: %v", err)
		return
	}
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pattern := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`).Replace(prefix) + "*"
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				t.Errorf("cleaning up: %v", err)
				return
			}
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning up: %v", err)
		return
	}
	if len(keys) > 0 {
		if err := c.Unlink(ctx, keys...).Err(); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	}
}

// killClients kills the connections of type typ ("normal" or "pubsub")
// named name, and returns how many it killed.
func killClients(t testing.TB, c *redis.Client, typ, name string) int {
	t.Helper()
	ctx := t.Context()
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", typ).Text()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	killed := 0
	for line := range strings.Lines(list) {
		var id, cname string
		for field := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "id":
				id = v
			case "name":
				cname = v
			}
		}
		if cname != name || id == "" {
			continue
		}
		if err := c.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
			t.Fatalf("CLIENT KILL ID: %v", err)
		}
		killed++
	}
	return killed
}

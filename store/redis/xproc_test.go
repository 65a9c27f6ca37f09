package redis_test

import (
	neturl "net/url"
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestBackend runs storetest's tests that need a second process on the
// same data and connections cut at the server (CLIENT KILL of the store's
// connections, by their client name).
func TestBackend(t *testing.T) {
	url := serverURL(t)
	storetest.RunBackend(t, storetest.Backend{
		Name: "redis",
		Open: func(t *testing.T) (store.Store, string, storetest.Cuts) {
			c := admin(t, url)
			name := randomName("client")
			s, prefix := openStore(t, withClientName(t, url, name))
			return s, prefix, storetest.Cuts{
				Subscriptions: func(t *testing.T) int { return killClients(t, c, "pubsub", name) },
				All: func(t *testing.T) int {
					return killClients(t, c, "pubsub", name) + killClients(t, c, "normal", name)
				},
			}
		},
		Reopen: func(t *testing.T, prefix string) store.Store {
			s, err := evredis.New(t.Context(), url, &evredis.Options{Prefix: prefix})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			storetest.CloseAtEnd(t, s)
			return s
		},
		Addr: hostOf(t, url),
		ReopenAt: func(t *testing.T, ns, addr string) store.Store {
			at := withHost(t, url, addr)
			s, err := evredis.New(t.Context(), at, &evredis.Options{Prefix: ns})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			storetest.CloseAtEnd(t, s)
			return s
		},
	})
}

// hostOf returns the host:port of rawURL.
func hostOf(t *testing.T, rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// withHost returns rawURL with its host:port replaced by addr.
func withHost(t *testing.T, rawURL, addr string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

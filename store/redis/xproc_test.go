package redis_test

import (
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
)

// TestBackend runs storetest's conformance suite, and its tests that need
// a second process on the same data and connections cut at the server (CLIENT KILL of the store's
// connections, by their client name).
func TestBackend(t *testing.T) {
	url := serverURL(t)
	storetest.RunBackend(t, storetest.Backend{
		Name: "redis",
		URL:  url,
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
		Reopen: func(t *testing.T, prefix, url string) (store.Store, error) {
			return evredis.New(t.Context(), url, &evredis.Options{Prefix: prefix})
		},
	})
}

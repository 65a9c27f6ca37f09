package redis_test

import (
	"context"
	"log"

	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/redis/go-redis/v9"
)

// A Store on a Redis server, with its keys under a prefix of its own. It is
// a [store.Store] like any other: see store's Example for a node waiting
// for a result that any node writes. (The example needs a Redis server, so
// it is compiled but not run.)
func Example() {
	s, err := evredis.New(context.Background(), "redis://127.0.0.1:6379/0", &evredis.Options{Prefix: "myserver:"})
	if err != nil {
		log.Fatal(err) // for instance: redis: server does not answer: dial tcp ...
	}
	defer s.Close()
}

// A Store can share a client the program already has, such as a failover
// client for Redis Sentinel. The program keeps ownership of the client.
func ExampleNewFromClient() {
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: []string{"127.0.0.1:26379"},
		Username:      "elicitvault", // an ACL user
		Password:      "secret",
	})
	defer client.Close()
	s, err := evredis.NewFromClient(client, &evredis.Options{Prefix: "myserver:"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
}

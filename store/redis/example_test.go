package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/redis/go-redis/v9"
)

// A node waits for a result that any node may write: it subscribes before
// it asks, and reads the store again after every message and every
// resubscription, so that a lost message delays nothing. (The example needs
// a Redis server, so it is compiled but not run.)
func Example() {
	ctx := context.Background()
	s, err := evredis.New(ctx, "redis://127.0.0.1:6379/0", &evredis.Options{Prefix: "myserver:"})
	if err != nil {
		log.Fatal(err) // for instance: redis: server does not answer: dial tcp ...
	}
	defer s.Close()

	const key, channel = "result-key", "result-channel"
	sub, err := s.Subscribe(ctx, channel)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()

	// Elsewhere, the answer is written first, then announced.
	go func() {
		s.Put(ctx, key, []byte("answer"), time.Now().Add(5*time.Minute))
		s.Publish(ctx, channel, []byte("ready"))
	}()

	timeout := time.After(5 * time.Minute)
	for {
		v, err := s.Take(ctx, key)
		if err == nil {
			fmt.Printf("%s\n", v)
			return
		}
		if !errors.Is(err, store.ErrNotFound) {
			log.Fatal(err)
		}
		select {
		case <-sub.Messages(): // a message or a Resubscribed notice: read again
		case <-timeout:
			log.Fatal("no answer")
		}
	}
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

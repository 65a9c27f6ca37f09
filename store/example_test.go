package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// A node waits for a result that any node may write: it subscribes before
// it asks, and reads the store again after every message and every
// resubscription, so that a lost message delays nothing. The same code
// runs on every backend (store/redis, store/postgres).
func Example() {
	ctx := context.Background()
	var s store.Store = memory.New(nil)
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
	// Output: answer
}

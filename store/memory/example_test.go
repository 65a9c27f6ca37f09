package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

func ExampleNew() {
	s := memory.New(nil)
	defer s.Close()
	ctx := context.Background()

	err := s.Put(ctx, "key", []byte("sealed value"), time.Now().Add(time.Minute))
	if err != nil {
		log.Fatal(err)
	}

	// The first Take gets the value; every later one finds nothing.
	v, err := s.Take(ctx, "key")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	_, err = s.Take(ctx, "key")
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// sealed value
	// true
}

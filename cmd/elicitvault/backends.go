package main

import (
	"context"
	"errors"

	"github.com/elicitvault/elicitvault/store"
)

// The Redis and PostgreSQL backends are wired in once their modules land.

func openRedis(ctx context.Context, rawURL string) (store.Store, error) {
	return nil, errors.New("this build has no Redis backend yet")
}

func openPostgres(ctx context.Context, rawURL string) (store.Store, error) {
	return nil, errors.New("this build has no PostgreSQL backend yet")
}

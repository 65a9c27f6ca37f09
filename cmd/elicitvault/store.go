package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

const storeFlagHelp = "the `store`: memory, redis://…, rediss://…, redis+cluster://…, redis+sentinel://…, postgres://… or postgresql://…"

// errMemoryStore is returned by commands that need a store shared with
// other processes when given --store memory.
var errMemoryStore = errors.New("--store memory lives only inside one process, so there is nothing in it " +
	"to rotate or inspect: give the URL of the Redis or PostgreSQL store the servers use")

// openStore opens the store named by rawURL: "memory", "redis://…",
// "rediss://…" (TLS), "redis+cluster://…", "redis+sentinel://…" (see
// store/redis.New), "postgres://…" or "postgresql://…". An unknown scheme
// is a configuration error; a server that does not answer is a run-time
// error. Error messages never repeat the URL, which may hold a password.
func openStore(ctx context.Context, rawURL string) (store.Store, error) {
	if rawURL == "memory" {
		return memory.New(nil), nil
	}
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, configErrorf("--store must be memory, redis://…, rediss://…, postgres://… or postgresql://…")
	}
	if _, err := url.Parse(rawURL); err != nil {
		// url's error quotes the URL, password included.
		return nil, configErrorf("--store: cannot parse the URL")
	}
	var (
		s   store.Store
		err error
	)
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		s, err = openRedis(ctx, rawURL)
	case "postgres", "postgresql":
		s, err = openPostgres(ctx, rawURL)
	default:
		return nil, configErrorf("--store: unknown scheme %q: use memory, redis://…, rediss://…, postgres://… or postgresql://…", scheme)
	}
	if err != nil {
		err = fmt.Errorf("opening the %s store: %w", scheme, redactURL(err, rawURL))
		if errors.Is(err, store.ErrInvalidArgument) { // the driver refused the URL
			return nil, configErr(err)
		}
		return nil, err
	}
	return s, nil
}

// redactURL keeps a driver's error from carrying the store URL's password.
// The backends promise as much; this is the belt to their braces.
func redactURL(err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if perr != nil {
		return err
	}
	if p, ok := u.User.Password(); ok && p != "" && strings.Contains(err.Error(), p) {
		return &redactedError{msg: strings.ReplaceAll(err.Error(), p, "xxxxx"), err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

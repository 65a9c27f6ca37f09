// Package testservers finds the Redis and PostgreSQL servers that the
// backend tests of elicitvault run against.
//
// A test asks for a server with RedisURL or PostgresURL. The URL comes from,
// in order:
//
//  1. the environment: ELICITVAULT_REDIS_URL or ELICITVAULT_POSTGRES_URL;
//  2. a container started with testcontainers-go, when a Docker engine
//     answers. One container per kind is started per test process, on first
//     use, and testcontainers' reaper removes it when the process exits;
//  3. nothing: the test is skipped with a message naming the variable, or,
//     when ELICITVAULT_REQUIRE_BACKENDS=1, it fails.
//
// The servers may be shared with other tests, other packages and other
// people: tests isolate themselves (random key prefixes, schemas of their
// own) and clean up after themselves.
//
// This package is a module of its own so that testcontainers-go and its
// dependencies are compiled only by the backends' tests, never by a program
// that imports a backend.
package testservers

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// The environment variables this package reads.
const (
	// RedisEnv names the variable holding a Redis URL, such as
	// redis://127.0.0.1:6379/0.
	RedisEnv = "ELICITVAULT_REDIS_URL"
	// PostgresEnv names the variable holding a PostgreSQL URL, such as
	// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	PostgresEnv = "ELICITVAULT_POSTGRES_URL"
	// RequireEnv names the variable that, set to 1, turns a missing server
	// into a test failure instead of a skip.
	RequireEnv = "ELICITVAULT_REQUIRE_BACKENDS"
)

// The images started when no URL is set. Redis 7.0 or later is required
// (PEXPIRETIME).
const (
	redisImage    = "redis:7-alpine"
	postgresImage = "postgres:17-alpine"
)

// startTimeout bounds pulling and starting one container.
const startTimeout = 3 * time.Minute

// RedisURL returns the URL of a Redis server for t, or skips or fails t when
// there is none.
func RedisURL(t testing.TB) string {
	t.Helper()
	return find(t, "Redis", RedisEnv, &redisServer)
}

// PostgresURL returns the URL of a PostgreSQL server for t, or skips or
// fails t when there is none. The database may hold other tables: tests use
// schemas of their own.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return find(t, "PostgreSQL", PostgresEnv, &postgresServer)
}

// server is a container started at most once per process.
type server struct {
	once  sync.Once
	start func(ctx context.Context) (string, error)
	url   string
	err   error
}

var (
	redisServer = server{start: func(ctx context.Context) (string, error) {
		c, err := tcredis.Run(ctx, redisImage)
		if err != nil {
			return "", err
		}
		return c.ConnectionString(ctx)
	}}
	postgresServer = server{start: func(ctx context.Context) (string, error) {
		c, err := tcpostgres.Run(ctx, postgresImage,
			tcpostgres.WithDatabase("test"),
			tcpostgres.BasicWaitStrategies(),
		)
		if err != nil {
			return "", err
		}
		return c.ConnectionString(ctx, "sslmode=disable")
	}}
)

func find(t testing.TB, name, env string, s *server) string {
	t.Helper()
	if url := os.Getenv(env); url != "" {
		return url
	}
	s.once.Do(func() {
		if err := dockerAnswers(); err != nil {
			s.err = fmt.Errorf("no Docker engine answers: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		s.url, s.err = s.start(ctx)
		if s.err != nil {
			s.err = fmt.Errorf("starting a %s container: %w", name, s.err)
		}
	})
	if s.err == nil {
		return s.url
	}
	msg := fmt.Sprintf("no %s server: set %s to its URL (%v)", name, env, s.err)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 requires it", msg, RequireEnv)
	} else {
		t.Skip(msg)
	}
	return ""
}

// dockerAnswers reports whether a Docker engine answers a health check.
// testcontainers panics when it cannot locate a Docker host at all, so the
// panic is turned into an error.
func dockerAnswers() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return err
	}
	defer provider.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := provider.Health(ctx); err != nil {
		return err
	}
	return nil
}

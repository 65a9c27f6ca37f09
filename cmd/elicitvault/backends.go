package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/redis"
)

// The --store URL takes one parameter of elicitvault's own per backend,
// removed before the URL reaches the driver:
//
//	redis://host:6379/0?prefix=myapp:       the key prefix (default "elicitvault:")
//	postgres://host/db?schema=myapp         the schema of the table (default: search_path)
//
// Servers and the operator's commands that share a store must agree on it.
const storeURLHelp = `The --store URL may carry a parameter of elicitvault's own: prefix=P on a
redis://, rediss://, redis+cluster:// or redis+sentinel:// URL sets the key prefix (default "elicitvault:"),
schema=S on a postgres:// URL the schema of the table (default: the
search_path). Use the values the servers use.`

// quietRedis keeps go-redis from logging its retries to stderr: the
// error they end in is returned, and that is what the CLI reports. It
// applies to the whole process.
var quietRedis sync.Once

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

func openRedis(ctx context.Context, rawURL string) (store.Store, error) {
	quietRedis.Do(func() { goredis.SetLogger(discardRedisLog{}) })
	u, prefix, err := takeParam(rawURL, "prefix")
	if err != nil {
		return nil, err
	}
	return redis.New(ctx, u, &redis.Options{Prefix: prefix})
}

func openPostgres(ctx context.Context, rawURL string) (store.Store, error) {
	u, schema, err := takeParam(rawURL, "schema")
	if err != nil {
		return nil, err
	}
	s, err := postgres.New(ctx, u, &postgres.Options{Schema: schema})
	switch {
	case errors.Is(err, postgres.ErrNotMigrated):
		return nil, &configError{msg: "the PostgreSQL database has no elicitvault tables: run \"elicitvault migrate --store …\" " +
			"with the same --store first (serve does it itself unless --migrate=false)", err: err}
	case errors.Is(err, postgres.ErrNewerSchema):
		return nil, configErr(err)
	}
	return s, err
}

// migrateStore runs postgres.Migrate on the store at rawURL, a
// postgres:// or postgresql:// URL, in the schema of its ?schema= parameter.
// Errors never repeat the URL.
func migrateStore(ctx context.Context, rawURL string) error {
	u, schema, err := takeParam(rawURL, "schema")
	if err != nil {
		return err
	}
	opts := &postgres.Options{Schema: schema}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		// The parser's message may quote the URL, password included.
		return configErrorf("--store: cannot parse the PostgreSQL URL")
	}
	cfg.MaxConns = 1
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "elicitvault/migrate"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrating the PostgreSQL store: %w", redactURL(err, rawURL))
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool, opts); err != nil {
		err = fmt.Errorf("migrating the PostgreSQL store: %w", redactURL(err, rawURL))
		if errors.Is(err, postgres.ErrNewerSchema) {
			return configErr(err)
		}
		return err
	}
	return nil
}

// takeParam removes the query parameter name from rawURL and returns its
// value.
func takeParam(rawURL, name string) (rest, value string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", configErrorf("cannot parse the --store URL")
	}
	q := u.Query()
	if !q.Has(name) {
		return rawURL, "", nil
	}
	value = q.Get(name)
	q.Del(name)
	u.RawQuery = q.Encode()
	return u.String(), value, nil
}

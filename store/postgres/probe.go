package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotifyLost is returned, wrapped, by New and NewFromPool when a NOTIFY
// sent through the pool does not reach a connection that LISTENs to it,
// as happens behind PgBouncer in transaction or statement pooling: LISTEN
// holds on one server connection, which the pooler hands to other clients.
// Give the store a direct connection for LISTEN with the listen_url
// parameter or Options.ListenURL.
var ErrNotifyLost = errors.New("a NOTIFY sent through the pool did not reach the LISTEN connection; behind a transaction-pooling PgBouncer, give LISTEN a direct connection with listen_url")

// probeTimeout bounds the wait for the start-up probe's notification.
const probeTimeout = 3 * time.Second

// probeNotify checks, at start-up, that notifications sent through pool
// reach a connection made with config, as the store's subscriptions need:
// it LISTENs on a channel of its own, NOTIFYs it through the pool and
// waits for the notification.
func probeNotify(ctx context.Context, pool *pgxpool.Pool, config *pgx.ConnConfig, schema string) error {
	b := make([]byte, 16)
	rand.Read(b) // never fails
	nonce := hex.EncodeToString(b)
	channel := channelName(schema, "probe-"+nonce)
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		return fmt.Errorf("postgres: connecting for LISTEN: %w", err)
	}
	defer closeConn(conn)
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("postgres: LISTEN: %w", err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, nonce); err != nil {
		return fmt.Errorf("postgres: NOTIFY: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("postgres: waiting for the probe NOTIFY: %w", ctx.Err())
			}
			return fmt.Errorf("postgres: %w (waited %v)", ErrNotifyLost, probeTimeout)
		}
		if n.Channel == channel && n.Payload == nonce {
			return nil
		}
	}
}

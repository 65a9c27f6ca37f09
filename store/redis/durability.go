package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// commander is what a write runs its command on: the client, or a
// pipeline on one connection.
type commander interface {
	redis.Scripter
	Do(ctx context.Context, args ...any) *redis.Cmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// ErrNotReplicated is returned, wrapped, by a write that the primary
// applied but fewer replicas than the URL's wait_replicas acknowledged
// within wait_timeout. A failover may lose such a write, or keep it: the
// caller must treat it as failed, and a Take that returns it has consumed
// the value without returning it (it fails closed).
var ErrNotReplicated = errors.New("write not acknowledged by enough replicas")

// redirectAttempts bounds the attempts of a write that a cluster node
// refused without running it (MOVED, a refused connection…) while the
// cluster fails over.
const redirectAttempts = 6

// write runs op, a command writing the Redis key rk, and returns its error
// (redis.Nil included). When the URL set wait_replicas, op runs in a
// pipeline on the primary of rk followed by WAIT on the same connection,
// and a write that too few replicas acknowledged returns ErrNotReplicated.
func (s *driver) write(ctx context.Context, rk string, op func(c commander) redis.Cmder) error {
	if s.durability.replicas == 0 {
		return op(s.client).Err()
	}
	var err error
	for attempt := range redirectAttempts {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(50<<attempt) * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return errors.Join(err, ctx.Err())
			case <-t.C:
			}
		}
		var node *redis.Client
		switch c := s.client.(type) {
		case *redis.Client:
			node = c
		case *redis.ClusterClient:
			node, err = c.MasterForKey(ctx, rk)
			if err != nil {
				c.ReloadState(ctx)
				continue
			}
		default:
			return fmt.Errorf("wait_replicas needs a client, failover client or cluster client, not %T", s.client)
		}
		var cmd redis.Cmder
		var wait *redis.Cmd
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = op(p)
			wait = p.Do(ctx, "WAIT", s.durability.replicas, s.durability.timeout.Milliseconds())
			return nil
		})
		err = cmd.Err()
		if err != nil && err != redis.Nil && notRun(err) {
			if c, ok := s.client.(*redis.ClusterClient); ok {
				c.ReloadState(ctx)
				continue
			}
		}
		if err != nil {
			return err
		}
		if n, err := wait.Int64(); err != nil {
			return err
		} else if n < int64(s.durability.replicas) {
			return fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, s.durability.replicas, s.durability.timeout)
		}
		return nil
	}
	return err
}

// notRun reports whether err shows that a cluster node did not run the
// command: it redirected it, refused it during a failover, or refused the
// connection.
func notRun(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "LOADING"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

package redis_test

import (
	"context"
	"log"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/redis/redistest"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// TestServerRestart runs storetest.RunRestart on a server of the test's
// own, with no persistence (a restart loses every key, as a failover to an
// empty replica would), stopped once cleanly and once by killing it.
func TestServerRestart(t *testing.T) {
	srv := redistest.Start(t)
	// go-redis logs every failed dial while the server is down.
	quietRedisLog.quiet.Store(true)
	t.Cleanup(func() { quietRedisLog.quiet.Store(false) })
	storetest.RunRestart(t, storetest.Server{
		Name: "redis",
		Open: func(t *testing.T) store.Store {
			s, err := evredis.New(t.Context(), "redis://"+srv.Addr(), &evredis.Options{Prefix: "restart:"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Stops: []func(*testing.T){
			func(t *testing.T) { srv.Stop(t, syscall.SIGTERM) },
			func(t *testing.T) { srv.Stop(t, syscall.SIGKILL) },
		},
		Start: func(t *testing.T) { srv.Restart(t) },
	})
}

// quietRedisLog is go-redis's logger in this test binary: the standard
// logger, unless quiet.
var quietRedisLog = func() *quietLogger {
	l := new(quietLogger)
	redis.SetLogger(l)
	return l
}()

type quietLogger struct{ quiet atomic.Bool }

func (l *quietLogger) Printf(_ context.Context, format string, v ...any) {
	if !l.quiet.Load() {
		log.Printf(format, v...)
	}
}

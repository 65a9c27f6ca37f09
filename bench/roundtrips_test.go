package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	evredis "github.com/elicitvault/elicitvault/store/redis"
)

// TestStoreRoundTrips counts, on the wire, what one elicitation costs the
// real Redis and PostgreSQL stores: a confirmation accepted at once by a
// go-sdk client over in-memory transports (one node, so the answer lands
// on the asking node), on both protocol generations. It counts
//
//   - round trips: the writes of every connection the store opens (its
//     client or pool, Pub/Sub and LISTEN connections included), each of
//     which the server answers: a pipeline, a script or a batch is one;
//   - the commands (Redis, through a go-redis hook, SUBSCRIBE and
//     UNSUBSCRIBE included) or statements (PostgreSQL, through a pgx
//     tracer, LISTEN, UNLISTEN and pg_notify included; a batch is named
//     with its statements) they carry.
//
// It prints both per elicitation and fails when the round trips go over
// the counts the README's Measurements table gives, so that a change
// which adds one shows. It is not a speed measurement: it runs in
// scripts/test with the other backend tests.
func TestStoreRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		backend, version string
		max              float64 // round trips per elicitation
	}{
		// none: the session's one pending form is kept in the process
		// (engine.Slot.Local), where the session lives
		{"redis", elicitProtocol, 0},
		// EVALSHA (claim: SET … NX, then GET of the store's epoch, in
		// one script), EVALSHA (commit)
		{"redis", "2026-07-28", 2},
		// none, as on Redis
		{"postgres", elicitProtocol, 0},
		// INSERT … ON CONFLICT (claim) and SELECT (the store's epoch) in
		// one batch, UPDATE (commit)
		{"postgres", "2026-07-28", 2},
	} {
		t.Run(tc.backend+"/"+tc.version, func(t *testing.T) {
			w := new(wireLog)
			var st store.Store
			if tc.backend == "redis" {
				st = countedRedisStore(t, w)
			} else {
				st = countedPostgresStore(t, w)
			}
			_, cs := confirmingClient(t, confirmServer(t, st), tc.version)
			callConfirm(t, cs) // warm: connections, prepared statements, LISTEN
			callConfirm(t, cs)
			w.reset()
			const n = 20
			for range n {
				callConfirm(t, cs)
			}
			trips, ops := w.snapshot()
			if named := sumOps(ops); trips > named {
				// Pub/Sub commands do not pass go-redis's hooks.
				ops["other writes (Pub/Sub)"] = trips - named
			}
			per := float64(trips) / n
			t.Logf("%s %s: %.1f round trips per elicitation (%s)", tc.backend, tc.version, per, formatWireOps(ops, n))
			if per > tc.max {
				t.Errorf("%.1f round trips per elicitation, over %g", per, tc.max)
			}
		})
	}
}

// callConfirm calls the confirm tool of confirmServer and checks that the
// answer was yes.
func callConfirm(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "true" || res.IsError {
		t.Fatalf("got %+v", res.Content[0])
	}
}

// wireLog counts the writes of the connections of one store and the
// commands or statements they carried.
type wireLog struct {
	mu     sync.Mutex
	writes int
	ops    map[string]int
}

func (w *wireLog) wrote() {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
}

func (w *wireLog) op(name string) {
	w.mu.Lock()
	if w.ops == nil {
		w.ops = make(map[string]int)
	}
	w.ops[name]++
	w.mu.Unlock()
}

func (w *wireLog) reset() {
	w.mu.Lock()
	w.writes, w.ops = 0, nil
	w.mu.Unlock()
}

func (w *wireLog) snapshot() (int, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, maps.Clone(w.ops)
}

func sumOps(ops map[string]int) int {
	n := 0
	for _, v := range ops {
		n += v
	}
	return n
}

// formatWireOps lists ops per elicitation, in name order.
func formatWireOps(ops map[string]int, n int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(ops)) {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(ops[name])/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// countedConn counts the writes of a connection.
type countedConn struct {
	net.Conn
	w *wireLog
}

func (c countedConn) Write(p []byte) (int, error) {
	c.w.wrote()
	return c.Conn.Write(p)
}

// countedRedisStore returns a store on a client whose connections and
// commands w counts, over a key prefix of its own.
func countedRedisStore(t *testing.T, w *wireLog) store.Store {
	url := backendURL(t, redisURLEnv, true)
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("%s: %v", redisURLEnv, err)
	}
	d := &net.Dialer{}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedConn{c, w}, nil
	}
	client := redis.NewClient(o)
	t.Cleanup(func() { client.Close() })
	client.AddHook(redisOpHook{w})
	s, err := evredis.NewFromClient(client, &evredis.Options{Prefix: benchPrefix(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// redisOpHook records each command's name; a pipeline's commands are
// recorded in one entry, "pipeline(a+b)".
type redisOpHook struct{ w *wireLog }

func (redisOpHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisOpHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.w.op(redisOpName(cmd))
		return next(ctx, cmd)
	}
}

func (h redisOpHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = redisOpName(c)
		}
		h.w.op("pipeline(" + strings.Join(names, "+") + ")")
		return next(ctx, cmds)
	}
}

// redisOpName is a command's name; for EVALSHA, that of the script's
// first command, which names it in the store's scripts.
func redisOpName(cmd redis.Cmder) string {
	return strings.ToUpper(cmd.Name())
}

// countedPostgresStore returns a store on a pool (and a LISTEN
// connection, which takes the pool's configuration) whose connections and
// statements w counts, in a schema of its own.
func countedPostgresStore(t *testing.T, w *wireLog) store.Store {
	url := backendURL(t, postgresURLEnv, true)
	schema := benchSchema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("%s: %v", postgresURLEnv, err)
	}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedConn{c, w}, nil
	}
	cfg.ConnConfig.Tracer = pgOpTracer{w}
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Cleanup(pool.Close)
	s, err := evpostgres.NewFromPool(ctx, pool, &evpostgres.Options{Schema: schema, CleanupInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pgOpTracer records each statement by its first word, with the function
// it calls for a SELECT (pg_notify) and the table-changing word of a WITH.
type pgOpTracer struct{ w *wireLog }

func (p pgOpTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	p.w.op(pgOpName(d.SQL))
	return ctx
}

func (pgOpTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart records a batch as one name: "batch (INSERT, SELECT)".
func (p pgOpTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var names []string
	for _, q := range d.Batch.QueuedQueries {
		names = append(names, pgOpName(q.SQL))
	}
	p.w.op("batch (" + strings.Join(names, ", ") + ")")
	return ctx
}

func (pgOpTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (pgOpTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// pgOpName names a statement: "SELECT pg_notify", "INSERT", "UPDATE",
// "DELETE", "WITH … (swap)", "LISTEN" and so on.
func pgOpName(sql string) string {
	f := strings.Fields(sql)
	if len(f) == 0 {
		return "empty"
	}
	word := strings.ToUpper(f[0])
	switch {
	case word == "SELECT" && strings.Contains(sql, "pg_notify"):
		return "SELECT pg_notify"
	case word == "WITH":
		return "WITH (" + strings.ToLower(strings.Trim(f[1], "(")) + ")"
	case word == "LISTEN" || word == "UNLISTEN":
		// the listener sends both in one string
		un := strings.Count(sql, "UNLISTEN ")
		return fmt.Sprintf("LISTEN×%d UNLISTEN×%d", strings.Count(sql, "LISTEN ")-un, un)
	}
	return word
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
)

// The servers of the backend scripts. Unset, the scripts skip; with
// ELICITVAULT_REQUIRE_BACKENDS=1 they fail instead.
const (
	redisEnv    = "ELICITVAULT_REDIS_URL"
	postgresEnv = "ELICITVAULT_POSTGRES_URL"
	requireEnv  = "ELICITVAULT_REQUIRE_BACKENDS"
)

// The scripts in testdata/backends run against each real backend, with
// $STORE the --store URL of a store of their own: a random key prefix on
// Redis, a random schema on PostgreSQL, removed afterwards.
func TestBackendScripts(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		base := backendURL(t, redisEnv)
		testscript.Run(t, backendParams(t, func(e *testscript.Env) error {
			prefix := "evclitest-" + randomName() + ":"
			storeURL, err := withParam(base, "prefix", prefix)
			if err != nil {
				return err
			}
			e.Setenv("STORE", storeURL)
			e.Defer(func() { emptyStore(t, storeURL) })
			return nil
		}))
	})
	t.Run("postgres", func(t *testing.T) {
		base := backendURL(t, postgresEnv)
		testscript.Run(t, backendParams(t, func(e *testscript.Env) error {
			schema := "evclitest_" + randomName()
			storeURL, err := withParam(base, "schema", schema)
			if err != nil {
				return err
			}
			ctx := context.Background()
			pool, err := pgxpool.New(ctx, base)
			if err != nil {
				return err
			}
			if err := postgres.Migrate(ctx, pool, &postgres.Options{Schema: schema}); err != nil {
				pool.Close()
				return err
			}
			e.Setenv("STORE", storeURL)
			e.Defer(func() {
				defer pool.Close()
				if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
					t.Errorf("dropping the test schema: %v", err)
				}
			})
			return nil
		}))
	})
}

func backendURL(t *testing.T, env string) string {
	u := os.Getenv(env)
	if u == "" {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s is not set and %s=1 requires the backend", env, requireEnv)
		}
		t.Skipf("%s is not set: set it to a server's URL to run the backend scripts", env)
	}
	return u
}

func backendParams(t *testing.T, setup func(*testscript.Env) error) testscript.Params {
	p := scriptParams("testdata/backends", setup)
	p.Cmds["seedstore"] = cmdSeedStore
	p.Cmds["checkstore"] = cmdCheckStore
	return p
}

func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func withParam(rawURL, name, value string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", errors.New("cannot parse the backend URL")
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// emptyStore deletes every entry of the store at storeURL.
func emptyStore(t *testing.T, storeURL string) {
	s, err := openStore(context.Background(), storeURL)
	if err != nil {
		t.Errorf("emptying the test store: %v", err)
		return
	}
	defer s.Close()
	fronttest.Empty(t, s)
}

// scriptKeyring loads the keyring from the script's environment.
func scriptKeyring(ts *testscript.TestScript) *ring.Keyring {
	k, err := ring.Load(ring.LoadOptions{Getenv: ts.Getenv})
	ts.Check(err)
	return k
}

func scriptStore(ts *testscript.TestScript) store.Store {
	s, err := openStore(context.Background(), ts.Getenv("STORE"))
	ts.Check(err)
	return s
}

// seedBinding is the binding of the i-th seeded record.
func seedBinding(i int) envelope.Binding {
	return envelope.Binding{
		Purpose:   "pending",
		Subject:   fmt.Sprintf("user-%d", i%7),
		SessionID: fmt.Sprintf("sess-%d", i),
		RecordID:  fmt.Sprintf("rec-%d", i),
	}
}

// seedTTLs spread the seeded records over the histogram: a third each
// expire within a minute, within 15 minutes and within a day.
var seedTTLs = []time.Duration{50 * time.Second, 10 * time.Minute, 2 * time.Hour}

// scriptRange returns the range FROM TO of a command's first two
// arguments.
func scriptRange(ts *testscript.TestScript, args []string) (from, to int) {
	from, err := strconv.Atoi(args[0])
	ts.Check(err)
	to, err = strconv.Atoi(args[1])
	ts.Check(err)
	return from, to
}

// cmdSeedStore writes records as a server would, with the library, under
// the script's MCP_ELICITATION_SECRET:
//
//	seedstore FROM TO [marker]
//
// writes records FROM to TO-1 ("marker" adds one one-shot marker, an entry
// that is not a record).
func cmdSeedStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: seedstore FROM TO [marker]")
	}
	from, to := scriptRange(ts, args)
	k := scriptKeyring(ts)
	s := scriptStore(ts)
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	for i := from; i < to; i++ {
		b := seedBinding(i)
		expiry := now.Add(seedTTLs[i%len(seedTTLs)])
		rec, err := k.SealRecord(b, fmt.Appendf(nil, "plaintext %d", i), expiry)
		ts.Check(err)
		ts.Check(s.Put(ctx, k.StoreKey(b), rec, expiry))
	}
	if len(args) == 3 {
		if args[2] != "marker" {
			ts.Fatalf("usage: seedstore FROM TO [marker]")
		}
		_, err := s.PutIfAbsent(ctx, "one-shot-marker-"+randomName(), []byte{1}, now.Add(time.Hour))
		ts.Check(err)
	}
}

// cmdCheckStore reads and opens records FROM to TO-1 as a server would,
// with the script's secrets:
//
//	checkstore FROM TO ok|unknown-key
func cmdCheckStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: checkstore FROM TO ok|unknown-key")
	}
	from, to := scriptRange(ts, args)
	k := scriptKeyring(ts)
	s := scriptStore(ts)
	defer s.Close()
	ctx := context.Background()
	for i := from; i < to; i++ {
		b := seedBinding(i)
		rec, err := k.Lookup(ctx, s, b)
		if errors.Is(err, store.ErrNotFound) && args[2] == "unknown-key" {
			continue // stored under a key this keyring cannot compute
		}
		ts.Check(err)
		pt, err := k.OpenRecord(b, rec)
		switch args[2] {
		case "ok":
			if err != nil || string(pt) != fmt.Sprintf("plaintext %d", i) {
				ts.Fatalf("record %d: %v", i, err)
			}
		case "unknown-key":
			if !errors.Is(err, envelope.ErrUnknownKey) {
				ts.Fatalf("record %d: %v, want unknown key", i, err)
			}
		default:
			ts.Fatalf("usage: checkstore FROM TO ok|unknown-key")
		}
	}
}

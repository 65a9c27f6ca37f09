package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestNew checks New's errors for a server that does not answer and for
// malformed URLs, which it must not repeat: they may hold a password.
func TestNew(t *testing.T) {
	storetest.CheckNew(t, func(ctx context.Context, url string) (store.Store, error) {
		return evpostgres.New(ctx, url, nil)
	},
		// Port 1 (tcpmux) is closed on any machine the tests run on.
		"postgres://postgres:s3cr3t@127.0.0.1:1/test?sslmode=disable&connect_timeout=5",
		[]string{
			"postgres://user:s3cr3t@127.0.0.1:notaport/test",
			"postgres://user:s3cr3t@127.0.0.1/test?sslmode=s3cr3t",
			"host=127.0.0.1 password=s3cr3t pool_max_conns=s3cr3t",
		}, "s3cr3t")
}

// TestMissingTable checks that New refuses a database that was never
// migrated, with an error that says what to do.
func TestMissingTable(t *testing.T) {
	url := serverURL(t)
	_, err := evpostgres.New(t.Context(), url, &evpostgres.Options{Schema: randomName("absent")})
	if !errors.Is(err, evpostgres.ErrNotMigrated) || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("New without a table: %v, want ErrNotMigrated, naming Migrate", err)
	}
}

// TestMigrate checks that Migrate creates the documented table, from
// schema.sql, and can run again, concurrently.
func TestMigrate(t *testing.T) {
	url := serverURL(t)
	schema := randomName("schema")
	t.Cleanup(func() { dropSchema(t, url, schema) })
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			conn, err := pgx.Connect(t.Context(), url)
			if err != nil {
				t.Errorf("connect: %v", err)
				return
			}
			defer conn.Close(context.Background())
			if err := evpostgres.Migrate(t.Context(), conn, &evpostgres.Options{Schema: schema}); err != nil {
				t.Errorf("Migrate: %v", err)
			}
		})
	}
	wg.Wait()

	conn := connect(t, url)
	rows, err := conn.Query(t.Context(), `
		SELECT column_name || ' ' || data_type || ' ' || is_nullable
		FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2
		ORDER BY ordinal_position`, schema, evpostgres.EntriesTable)
	if err != nil {
		t.Fatalf("reading the columns: %v", err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("reading the columns: %v", err)
	}
	want := []string{"key bytea NO", "value bytea NO", "expires_at timestamp with time zone NO"}
	if strings.Join(cols, ", ") != strings.Join(want, ", ") {
		t.Errorf("columns = %q, want %q", cols, want)
	}

	// schema.sql, run by hand, is what Migrate runs.
	sql, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	other := randomName("schema")
	t.Cleanup(func() { dropSchema(t, url, other) })
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+other+"; SET search_path TO "+other+"; "+string(sql)+"; RESET search_path"); err != nil {
		t.Fatalf("running schema.sql: %v", err)
	}
	s, err := evpostgres.New(t.Context(), url, &evpostgres.Options{Schema: other})
	if err != nil {
		t.Fatalf("New over the schema.sql table: %v", err)
	}
	s.Close()
}

// TestKeysStoredAsGiven checks that keys reach the table byte for byte,
// whatever they hold, and come back from Scan the same.
func TestKeysStoredAsGiven(t *testing.T) {
	url := serverURL(t)
	s, schema := openStore(t, url)
	conn := connect(t, url)
	ctx := t.Context()
	expiry := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	keys := []string{"plain", "\x00nul\x00", "\xff\xfe not UTF-8", "ünïcödé", strings.Repeat("k", 4096)}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte("v:"+k), expiry); err != nil {
			t.Fatalf("Put: %v", err)
		}
		var v []byte
		var exp time.Time
		err := conn.QueryRow(ctx, "SELECT value, expires_at FROM "+schema+"."+evpostgres.EntriesTable+" WHERE key = $1", []byte(k)).Scan(&v, &exp)
		if err != nil || string(v) != "v:"+k || !exp.Equal(expiry) {
			t.Errorf("row of key %q = %q, %v, %v", k, v, exp, err)
		}
	}
	got := map[string]bool{}
	for cursor := ""; ; {
		entries, next, err := s.Scan(ctx, cursor, 2)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, e := range entries {
			got[e.Key] = true
			if string(e.Value) != "v:"+e.Key || !e.Expiry.Equal(expiry) {
				t.Errorf("Scan entry %q = %q, %v", e.Key, e.Value, e.Expiry)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	for _, k := range keys {
		if !got[k] {
			t.Errorf("Scan did not return key %q", k)
		}
	}
	if len(got) != len(keys) {
		t.Errorf("Scan returned %d keys, want %d", len(got), len(keys))
	}
	if _, _, err := s.Scan(ctx, "not base64!", 10); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Scan with a malformed cursor: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := s.Scan(ctx, "", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Scan with count 0: %v, want ErrInvalidArgument", err)
	}
}

// TestCleanup checks that the cleanup deletes expired rows, and only
// those.
func TestCleanup(t *testing.T) {
	url := serverURL(t)
	s, schema := openStore(t, url, evpostgres.Options{CleanupInterval: 50 * time.Millisecond})
	conn := connect(t, url)
	ctx := t.Context()
	for i := range 20 {
		if err := s.Put(ctx, "short"+string(rune('a'+i)), []byte("v"), time.Now().Add(100*time.Millisecond)); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if err := s.Put(ctx, "long", []byte("v"), time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+"."+evpostgres.EntriesTable).Scan(&n); err != nil {
			t.Fatalf("count: %v", err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows left after 5s, want the 1 live row", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.Get(ctx, "long"); err != nil {
		t.Errorf("Get of the live row: %v", err)
	}
}

// TestChannelLayout checks the documented NOTIFY channel and payload, and
// the size limit.
func TestChannelLayout(t *testing.T) {
	url := serverURL(t)
	s, schema := openStore(t, url)
	conn := connect(t, url)
	ctx := t.Context()

	sum := sha256.Sum256([]byte(schema + "\x00" + "my channel"))
	name := "ev_" + hex.EncodeToString(sum[:16])
	if _, err := conn.Exec(ctx, "LISTEN "+name); err != nil {
		t.Fatalf("LISTEN: %v", err)
	}
	msg := bytes.Repeat([]byte{0, 1, 2, 0xff}, evpostgres.MaxMessageSize/4)
	if err := s.Publish(ctx, "my channel", msg); err != nil {
		t.Fatalf("Publish of MaxMessageSize bytes: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("WaitForNotification: %v", err)
	}
	if n.Channel != name || n.Payload != base64.StdEncoding.EncodeToString(msg) {
		t.Errorf("notification on %q with %d bytes, want %q with the message in base64", n.Channel, len(n.Payload), name)
	}

	err = s.Publish(ctx, "my channel", make([]byte, evpostgres.MaxMessageSize+1))
	if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "5900") {
		t.Errorf("Publish over MaxMessageSize: %v, want ErrInvalidArgument naming the limit", err)
	}
}

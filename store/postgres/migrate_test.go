package postgres_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/jackc/pgx/v5"
)

// freshDatabase creates an empty database on the test server, dropped when
// t ends, and returns its URL.
func freshDatabase(t testing.TB, rawURL string) string {
	t.Helper()
	name := randomName("db")
	admin := connect(t, rawURL)
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("CREATE DATABASE: %v", err)
	}
	t.Cleanup(func() { cleanUp(t, rawURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func schemaVersionOf(t testing.TB, conn *pgx.Conn) int {
	t.Helper()
	var v int
	if err := conn.QueryRow(t.Context(), "SELECT version FROM elicitvault_schema").Scan(&v); err != nil {
		t.Fatalf("reading the schema version: %v", err)
	}
	return v
}

// TestMigrateFreshDatabase runs Migrate from eight connections at once on
// an empty database, in its default schema: each succeeds (the advisory
// lock makes them take turns; without it, concurrent CREATE TABLE IF NOT
// EXISTS fails on PostgreSQL's catalog), the version is recorded, and a
// store works over the result.
func TestMigrateFreshDatabase(t *testing.T) {
	dbURL := freshDatabase(t, serverURL(t))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		conn := connect(t, dbURL)
		wg.Go(func() {
			<-start
			if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
				t.Errorf("Migrate: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if v := schemaVersionOf(t, connect(t, dbURL)); v != evpostgres.SchemaVersion {
		t.Errorf("schema version %d, want %d", v, evpostgres.SchemaVersion)
	}
	s, err := evpostgres.New(t.Context(), dbURL, nil)
	if err != nil {
		t.Fatalf("New after Migrate: %v", err)
	}
	defer s.Close()
	if err := s.Put(t.Context(), "k", []byte("v"), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

// TestMigrateAgainKeepsEntries runs Migrate on a database already at
// SchemaVersion: nothing changes, entries included.
func TestMigrateAgainKeepsEntries(t *testing.T) {
	dbURL := freshDatabase(t, serverURL(t))
	conn := connect(t, dbURL)
	if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
		t.Fatal(err)
	}
	s, err := evpostgres.New(t.Context(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(t.Context(), "kept", []byte("value"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if got, err := s.Get(t.Context(), "kept"); err != nil || string(got) != "value" {
		t.Errorf("Get after the second Migrate: %q, %v", got, err)
	}
}

// TestMigrateUnversioned migrates a database made before schema versions
// were recorded (the entries table alone): its entries stay, and the
// version is recorded.
func TestMigrateUnversioned(t *testing.T) {
	dbURL := freshDatabase(t, serverURL(t))
	conn := connect(t, dbURL)
	if _, err := conn.Exec(t.Context(), `
		CREATE TABLE elicitvault_entries (key bytea PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL);
		INSERT INTO elicitvault_entries VALUES ('old', 'value', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if v := schemaVersionOf(t, conn); v != evpostgres.SchemaVersion {
		t.Errorf("schema version %d, want %d", v, evpostgres.SchemaVersion)
	}
	s, err := evpostgres.New(t.Context(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(t.Context(), "old"); err != nil || string(got) != "value" {
		t.Errorf("Get of the entry from before: %q, %v", got, err)
	}
}

// TestNewerSchemaRefused: a database that a later release migrated is
// refused by Migrate, which leaves it as it is, and by New, with an error
// that gives both versions.
func TestNewerSchemaRefused(t *testing.T) {
	dbURL := freshDatabase(t, serverURL(t))
	conn := connect(t, dbURL)
	if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
		t.Fatal(err)
	}
	newer := evpostgres.SchemaVersion + 1
	// The later release dropped the index, say: Migrate must not put it back.
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(
		"UPDATE elicitvault_schema SET version = %d; DROP INDEX elicitvault_entries_expires_at", newer)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("schema version %d, but this version of elicitvault knows versions up to %d", newer, evpostgres.SchemaVersion)

	err := evpostgres.Migrate(t.Context(), conn, nil)
	if !errors.Is(err, evpostgres.ErrNewerSchema) || !strings.Contains(err.Error(), want) {
		t.Errorf("Migrate of a newer schema: %v, want ErrNewerSchema saying %q", err, want)
	}
	if v := schemaVersionOf(t, conn); v != newer {
		t.Errorf("schema version %d after the refused Migrate, want %d", v, newer)
	}
	var index bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass('elicitvault_entries_expires_at') IS NOT NULL").Scan(&index); err != nil {
		t.Fatal(err)
	}
	if index {
		t.Errorf("the refused Migrate changed the schema")
	}

	s, err := evpostgres.New(t.Context(), dbURL, nil)
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, evpostgres.ErrNewerSchema) || !strings.Contains(err.Error(), want) {
		t.Errorf("New over a newer schema: %v, want ErrNewerSchema saying %q", err, want)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/elicitvault/elicitvault/store/postgres"
)

// freshDatabase creates an empty database on the PostgreSQL test server,
// dropped when t ends, and returns its URL.
func freshDatabase(t testing.TB, base string) string {
	t.Helper()
	ctx := context.Background()
	name := "evclitest_db_" + randomName()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("CREATE DATABASE: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping the test database: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping the test database: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

var mcpAt = regexp.MustCompile(`MCP at (http://\S+/mcp)`)

// TestServeMigratesEmptyDatabase starts two servers at once on an empty
// PostgreSQL database, as a deployment of two replicas does: both create
// (or find) the store's tables, under Migrate's advisory lock, and serve
// MCP; the database is then at postgres.SchemaVersion.
func TestServeMigratesEmptyDatabase(t *testing.T) {
	dbURL := freshDatabase(t, backendURL(t, postgresEnv))
	for _, storeURL := range []string{dbURL, dbURL + "&schema=elicitvault_app"} {
		serveTwice(t, storeURL)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"public.elicitvault_schema", "elicitvault_app.elicitvault_schema"} {
		var v int
		if err := conn.QueryRow(context.Background(), "SELECT version FROM "+table).Scan(&v); err != nil {
			t.Errorf("reading %s: %v", table, err)
		} else if v != postgres.SchemaVersion {
			t.Errorf("%s: version %d, want %d", table, v, postgres.SchemaVersion)
		}
	}
}

type serveResult struct {
	code   int
	stderr *fronttest.LockedBuffer
}

// serveTwice runs two servers at once on storeURL, checks that each serves
// MCP, and stops them.
func serveTwice(t *testing.T, storeURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan serveResult, 2)
	stderrs := []*fronttest.LockedBuffer{{}, {}}
	for _, stderr := range stderrs {
		e := serveEnv(stderr)
		go func() {
			code := run(ctx, e, []string{"serve", "--store", storeURL, "--addr", "127.0.0.1:0", "--fallback", "none"})
			results <- serveResult{code, stderr}
		}()
	}
	for _, stderr := range stderrs {
		endpoint := waitFor(t, stderr, results)
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
		if err != nil {
			t.Fatalf("connecting to %s: %v", endpoint, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "delete_contacts" }) {
			t.Errorf("tools/list has no delete_contacts")
		}
		cs.Close()
	}
	cancel()
	for range stderrs {
		if r := <-results; r.code != 0 {
			t.Errorf("serve exited %d:\n%s", r.code, r.stderr)
		}
	}
}

// serveEnv is the environment of an in-process serve: secret A, nothing on
// stdin, its stderr written to stderr.
func serveEnv(stderr io.Writer) *env {
	return &env{
		stdin:  strings.NewReader(""),
		stdout: io.Discard,
		stderr: stderr,
		getenv: func(name string) string {
			if name == "MCP_ELICITATION_SECRET" {
				return testSecrets["A"]
			}
			return ""
		},
	}
}

// waitFor waits until serve says where it serves MCP, and returns that URL.
func waitFor(t *testing.T, stderr *fronttest.LockedBuffer, results chan serveResult) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := mcpAt.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case r := <-results:
			t.Fatalf("serve exited %d before serving:\n%s", r.code, stderr)
		case <-deadline:
			t.Fatalf("serve did not start in 30s:\n%s", stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The scripts in testdata/postgres run against an empty database of their
// own on the PostgreSQL test server, whose URL is $STORE.
func TestPostgresScripts(t *testing.T) {
	base := backendURL(t, postgresEnv)
	p := scriptParams("testdata/postgres", func(e *testscript.Env) error {
		e.Setenv("STORE", freshDatabase(e.T().(testing.TB), base))
		return nil
	})
	p.Cmds["schemaversion"] = cmdSchemaVersion
	testscript.Run(t, p)
}

// cmdSchemaVersion sets the schema version that the database of $STORE
// records, as a later release's migration would: schemaversion N.
func cmdSchemaVersion(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: schemaversion N")
	}
	v, err := strconv.Atoi(args[0])
	ts.Check(err)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ts.Getenv("STORE"))
	ts.Check(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf("UPDATE elicitvault_schema SET version = %d", v))
	ts.Check(err)
}

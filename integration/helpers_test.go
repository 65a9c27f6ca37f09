package integration

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
	mg "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the tests share to set up a node: its keys, its Elicitor, its
// store, in a namespace of its own on the shared Redis and PostgreSQL
// servers.

// migratedSchema migrates a new schema, named prefix and random letters,
// on the PostgreSQL server at raw, and returns its name and a pool on that
// server. The schema is dropped and the pool closed when the test ends.
func migratedSchema(t *testing.T, raw, prefix string) (string, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	schema := prefix + randomName()
	pool, err := pgxpool.New(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, &postgres.Options{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropSchema(t, pool, schema) })
	return schema, pool
}

// dropSchema drops schema, and everything in it, if it exists.
func dropSchema(t *testing.T, pool *pgxpool.Pool, schema string) {
	if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("dropping the test schema: %v", err)
	}
}

// mustOpen opens the store of backend ("redis" or "postgres") at url in
// the namespace ns (a key prefix, a schema); it is closed when the test
// ends.
func mustOpen(t *testing.T, backend, url, ns string) store.Store {
	t.Helper()
	s, err := openStore(t.Context(), backend, url, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newElicitor returns an Elicitor with keys and cfg on st, closed when the
// test ends.
func newElicitor(t *testing.T, keys *keyring.Keyring, st store.Store, cfg *elicit.Config) *elicit.Elicitor {
	t.Helper()
	ev, err := elicit.New(keys, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return ev
}

// keysA is the keyring of secretA, the secret of every node of a test's
// deployment.
func keysA(t *testing.T) *keyring.Keyring {
	t.Helper()
	keys, err := keyring.New([]byte(secretA))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// addTextTool adds to s the tool name, without arguments, whose result is
// the text f returns; an error of f is the call's error.
func addTextTool(s *mcp.Server, name string, f func(context.Context) (string, error)) {
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		out, err := f(ctx)
		if err != nil {
			return nil, nil, err
		}
		return text(out), nil, nil
	})
}

// addMGTextTool is addTextTool on an mcp-go server.
func addMGTextTool(m *mgserver.MCPServer, name string, f func(context.Context) (string, error)) {
	m.AddTool(mg.NewTool(name), func(ctx context.Context, _ mg.CallToolRequest) (*mg.CallToolResult, error) {
		out, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return mg.NewToolResultText(out), nil
	})
}

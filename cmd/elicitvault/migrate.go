package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/elicitvault/elicitvault/store/postgres"
)

func init() {
	register(&command{
		name:     "migrate",
		synopsis: "--store postgres://…",
		summary:  "create or upgrade the PostgreSQL store's tables",
		help: `Brings the tables of the PostgreSQL store to the schema version of this
elicitvault (store/postgres's schema.sql), in one transaction under an
advisory lock: it creates them in an empty database (and the schema of
?schema=S), runs only the migrations an older one lacks, and changes
nothing in a database already at this version. It refuses, untouched, a
database that a newer elicitvault migrated. It is safe to run again, and
from several places at once.

serve does the same when it starts, unless --migrate=false: operators who
migrate at deployment, with a role that may create tables, run this
command then and serve with --migrate=false and a role that may only read
and write them. Redis and memory stores have no schema.` + "\n\n" + storeURLHelp,
		run: runMigrate,
	})
}

func runMigrate(ctx context.Context, e *env, args []string) error {
	c := commands["migrate"]
	fs := newFlagSet(c)
	storeURL := fs.String("store", "", "the `URL` of the PostgreSQL store: postgres://… or postgresql://… (required)")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	if err := requireFlags(fs, "store"); err != nil {
		return err
	}
	if !isPostgresURL(*storeURL) {
		return configErrorf("--store: only a PostgreSQL store (postgres://… or postgresql://…) has a schema to migrate; Redis and memory stores need none")
	}
	if err := migrateStore(ctx, *storeURL); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "PostgreSQL store schema at version %d\n", postgres.SchemaVersion)
	return nil
}

// isPostgresURL reports whether a --store URL names a PostgreSQL store.
func isPostgresURL(rawURL string) bool {
	scheme, _, ok := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	return ok && (scheme == "postgres" || scheme == "postgresql")
}

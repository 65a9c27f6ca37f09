module github.com/elicitvault/elicitvault/bench

go 1.26.0

// The core module and the backends are in this repository; go.work ties
// them together for development, and these make the module build alone.
replace (
	github.com/elicitvault/elicitvault => ../
	// Only the backends' tests import it; go mod tidy resolves it all the same.
	github.com/elicitvault/elicitvault/store/internal/testservers => ../store/internal/testservers
	github.com/elicitvault/elicitvault/store/postgres => ../store/postgres
	github.com/elicitvault/elicitvault/store/redis => ../store/redis
)

require (
	github.com/elicitvault/elicitvault v0.0.0
	github.com/elicitvault/elicitvault/store/postgres v0.0.0-00010101000000-000000000000
	github.com/elicitvault/elicitvault/store/redis v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-jose/go-jose/v4 v4.1.8 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

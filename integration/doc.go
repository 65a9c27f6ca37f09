// Package integration holds tests that span processes and real servers:
// one-shot token consumption by two OS processes sharing a Redis or
// PostgreSQL store. It is a module of its own so that the core module
// never requires a database driver.
//
// Servers come from ELICITVAULT_REDIS_URL and ELICITVAULT_POSTGRES_URL;
// without them the tests skip with a message, and with
// ELICITVAULT_REQUIRE_BACKENDS=1 they fail instead.
package integration

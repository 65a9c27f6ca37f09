// Package integration holds tests that span processes and real servers:
// one-shot token consumption by two OS processes sharing a Redis or
// PostgreSQL store; zero knowledge (the real flow over each backend, then
// a search of everything the backend holds and everything the store sent
// it for the known session IDs, subjects, elicitation IDs, messages, field
// names and answers, raw, in hex and in base64: see leak_test.go to check
// another flow); and rotation under load (10,000 records rewrapped while a
// third of them are resolved). It is a module of its own so that the core
// module never requires a database driver.
//
// The oauth*_test.go files connect accounts (elicit/oauth) through a real
// OpenID Provider (node-oidc-provider, interop/oidc-provider.mjs): the
// zero-knowledge search extended to tokens, codes, verifiers and account
// IDs over both backends, with the flow started on one node and finished
// on another; the same over Redis with the person in headless Chromium and
// one refresh across nodes; and `elicitvault serve --oauth-issuer`.
//
// The serve_*_test.go files run `elicitvault serve`, built once per run,
// as an OS process and drive it with real clients: the go-sdk's (on its
// default protocol and on 2025-11-25) and the TypeScript SDK's, v1
// (@modelcontextprotocol/sdk, over Streamable HTTP and stdio) and v2
// (@modelcontextprotocol/client, on 2025-11-25 and 2026-07-28, eliciting
// and relaying through its model), both through interop/elicit-client.mjs;
// two serve
// processes over one Redis; answers bound to a session or a user; and a
// graceful shutdown in the middle of an elicitation.
//
// Servers come from ELICITVAULT_REDIS_URL and ELICITVAULT_POSTGRES_URL;
// without them the tests skip with a message, and with
// ELICITVAULT_REQUIRE_BACKENDS=1 they fail instead. The TypeScript tests
// need node and interop/node_modules (npm ci in interop/); without them
// they skip, and with ELICITVAULT_REQUIRE_NODE=1 they fail.
package integration

// Package fuzz holds elicitvault's fuzz targets: one for every parser of
// bytes that come from outside the process (sealed records, stored
// records, key IDs, the secret list in the environment, tokens, tool
// arguments, elicited content, a retried call's inputResponses).
//
// The package has no code of its own; its targets are tests. A plain
//
//	go test ./fuzz
//
// runs every target over its seeds (the f.Add calls and testdata/fuzz), as
// part of the ordinary test suite. A fuzzing campaign runs one target at a
// time, for as long as it is given:
//
//	go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime 10m ./fuzz
//	go test -run '^$' -fuzz '^FuzzOpenRecord$' -fuzztime 10m ./fuzz
//
// (-fuzz takes a regular expression that must match exactly one target,
// hence the anchors: FuzzOpen alone would also match FuzzOpenRecord.) The
// fuzzer keeps what it finds interesting in the build cache; an input that
// fails is written to testdata/fuzz/<target>/ and from then on runs with
// every plain go test. Commit it with the fix.
//
// With Go 1.26 a run bounded by time can end in "context deadline
// exceeded" at the -fuzztime boundary with no failing input written: a race
// in the fuzzing coordinator (go.dev/issue/75804, fixed in Go 1.27), not a
// finding. Where that matters (a scripted smoke run), bound the run by a
// count of executions instead, which has no deadline to race:
//
//	go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime 2000000x ./fuzz
//
// The envelope targets check more than the absence of panics. Their seeds
// are built deterministically by an implementation of the sealed-record
// format written here from SECURITY.md (fixed secrets, fixed nonces, a
// fixed clock), so the set of authentic records is known and the same in
// every run: Open may succeed, or report expired, only for one of them.
// Anything else the fuzzer produces must be rejected as invalid or
// unknown key.
//
// Targets: FuzzOpen, FuzzParseHeader, FuzzOpenRecord, FuzzRewrap,
// FuzzParseKeyID, FuzzLoadPrevious (envelope_test.go); FuzzCompactVerify,
// FuzzJWEVerify (token_test.go); FuzzHashArgs (args_test.go);
// FuzzElicitContent, FuzzElicitSchema (elicit_test.go); FuzzCredential
// (credential_test.go, the vault of elicit/oauth). Parsers that are not
// exported keep their targets beside them: FuzzCheckURL and
// FuzzFieldParse (elicit/client), FuzzInputResponses and FuzzForwardedFor
// (the inputResponses check and the X-Forwarded-For reading of elicit's
// Handler, in elicit), FuzzAppend
// (internal/token/internal/jcs), FuzzReadString and FuzzAppendString
// (internal/token/internal/wire), FuzzParseContent (the browser form's
// posted fields, elicit/internal/browserform), FuzzParseURL (the Redis
// store's URL forms, store/redis), FuzzClean (the terminal sanitizer,
// internal/termtext), FuzzParse (the store epoch record, internal/epoch),
// FuzzParse and FuzzSensitive (the form schema and content parser and the
// secret-field check, internal/form), FuzzIsMarker (one-shot markers,
// internal/oneshot).
package fuzz

// Package bench measures elicitvault against the baselines of its design,
// side by side in one run, as ratios: the envelope against raw stdlib
// AES-256-GCM, tokens against go-jose, the store backends against the raw
// driver commands, and the elicitation flow against the go-sdk's bare
// ServerSession.Elicit.
//
// It is a module of its own, so that what the benchmarks import never
// reaches the core module's requirements. Run from the repository root:
//
//	go test -run XXX -bench Envelope -benchtime 2s ./bench
//
// The Test*Ratios tests run the benchmarks with testing.Benchmark and
// assert the ratios the design sets. They run only when
// ELICITVAULT_BENCH_RATIOS=1, as scripts/bench sets it (scripts/bench from
// the repository root prints every ratio), and never with -short or under
// the race detector, which would measure itself: a measurement on a loaded
// machine is not a test's pass or fail. scripts/test runs every benchmark
// once (-benchtime 1x) instead, so that they still compile and run.
package bench

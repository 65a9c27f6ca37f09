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
// assert the ratios the design sets; they are skipped with -short and under
// the race detector, which would measure itself.
package bench

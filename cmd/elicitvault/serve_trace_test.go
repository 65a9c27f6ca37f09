package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestStartTrace: with ELICITVAULT_RUNTIME_TRACE serve writes a Go runtime
// trace there, complete once stopped; without it, nothing.
func TestStartTrace(t *testing.T) {
	checkWritesFile(t, startTrace, traceEnv, traceSecondsEnv, []byte("go 1."))
}

// TestStartCPUProfile: with ELICITVAULT_CPU_PROFILE serve writes a CPU
// profile there, complete once stopped (a gzipped profile.proto, whose
// first bytes are gzip's magic number); without it, nothing.
func TestStartCPUProfile(t *testing.T) {
	checkWritesFile(t, startCPUProfile, cpuProfileEnv, cpuProfileSecondsEnv, []byte{0x1f, 0x8b})
}

// checkWritesFile starts start with the file named by pathEnv (for at most
// secondsEnv's seconds), stops it, and checks the file starts with magic;
// then starts and stops it without pathEnv.
func checkWritesFile(t *testing.T, start func(func(string) string, io.Writer) func(), pathEnv, secondsEnv string, magic []byte) {
	path := filepath.Join(t.TempDir(), "serve.out")
	env := map[string]string{pathEnv: path, secondsEnv: "60"}
	start(func(k string) string { return env[k] }, io.Discard)()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, magic) {
		t.Errorf("the file starts %q, not with %q", b[:min(len(b), 16)], magic)
	}
	start(func(string) string { return "" }, io.Discard)() // nothing to stop
}

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
	path := filepath.Join(t.TempDir(), "serve.trace")
	env := map[string]string{traceEnv: path, traceSecondsEnv: "60"}
	stop := startTrace(func(k string) string { return env[k] }, io.Discard)
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("the trace file starts %q, not a Go trace's header", b[:min(len(b), 16)])
	}
	startTrace(func(string) string { return "" }, io.Discard)() // nothing to stop
}

// TestStartCPUProfile: with ELICITVAULT_CPU_PROFILE serve writes a CPU
// profile there, complete once stopped (a gzipped profile.proto); without
// it, nothing.
func TestStartCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.pprof")
	env := map[string]string{cpuProfileEnv: path, cpuProfileSecondsEnv: "60"}
	stop := startCPUProfile(func(k string) string { return env[k] }, io.Discard)
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile starts %q, not gzip's magic number", b[:min(len(b), 16)])
	}
	startCPUProfile(func(string) string { return "" }, io.Discard)() // nothing to stop
}

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

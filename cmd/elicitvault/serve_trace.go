package main

import (
	"fmt"
	"io"
	"os"
	"runtime/trace"
	"strconv"
	"time"
)

// traceEnv names the variable that, set to a file path, makes serve write
// a Go runtime trace (go tool trace) of its first traceSecondsEnv seconds
// (default 10), or until it stops if that comes first. It is for
// measuring serve (scripts/e2ebench runs it killed, not stopped, so the
// window is what the file holds): leave it unset.
const (
	traceEnv        = "ELICITVAULT_RUNTIME_TRACE"
	traceSecondsEnv = "ELICITVAULT_RUNTIME_TRACE_SECONDS"
)

// startTrace starts the trace traceEnv asks for and returns what stops it
// early; without traceEnv it does nothing.
func startTrace(getenv func(string) string, stderr io.Writer) (stop func()) {
	path := getenv(traceEnv)
	if path == "" {
		return func() {}
	}
	d := 10 * time.Second
	if s, err := strconv.Atoi(getenv(traceSecondsEnv)); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "elicitvault: serve: %s: %v\n", traceEnv, err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "elicitvault: serve: %s: %v\n", traceEnv, err)
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
		}
		trace.Stop()
		f.Close()
	}()
	return func() { close(done); <-ended }
}

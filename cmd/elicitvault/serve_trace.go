package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// traceEnv names the variable that, set to a file path, makes serve write
// a Go runtime trace (go tool trace) of its first traceSecondsEnv seconds
// (default 10), or until it stops if that comes first; cpuProfileEnv and
// cpuProfileSecondsEnv do the same for a CPU profile (go tool pprof).
// They are for measuring serve (scripts/e2ebench runs it killed, not
// stopped, so the window is what the file holds): leave them unset.
const (
	traceEnv             = "ELICITVAULT_RUNTIME_TRACE"
	traceSecondsEnv      = "ELICITVAULT_RUNTIME_TRACE_SECONDS"
	cpuProfileEnv        = "ELICITVAULT_CPU_PROFILE"
	cpuProfileSecondsEnv = "ELICITVAULT_CPU_PROFILE_SECONDS"
)

// startTrace starts the trace traceEnv asks for and returns what stops it
// early; without traceEnv it does nothing.
func startTrace(getenv func(string) string, stderr io.Writer) (stop func()) {
	return startWindow(getenv, stderr, traceEnv, traceSecondsEnv, trace.Start, trace.Stop)
}

// startCPUProfile starts the CPU profile cpuProfileEnv asks for and
// returns what stops it early; without cpuProfileEnv it does nothing.
func startCPUProfile(getenv func(string) string, stderr io.Writer) (stop func()) {
	return startWindow(getenv, stderr, cpuProfileEnv, cpuProfileSecondsEnv, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startWindow runs start on the file that pathEnv names, and end once the
// seconds of secondsEnv (default 10) have passed or the returned stop is
// called, whichever comes first.
func startWindow(getenv func(string) string, stderr io.Writer, pathEnv, secondsEnv string, start func(io.Writer) error, end func()) (stop func()) {
	path := getenv(pathEnv)
	if path == "" {
		return func() {}
	}
	d := 10 * time.Second
	if s, err := strconv.Atoi(getenv(secondsEnv)); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "elicitvault: serve: %s: %v\n", pathEnv, err)
		return func() {}
	}
	if err := start(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "elicitvault: serve: %s: %v\n", pathEnv, err)
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
		end()
		f.Close()
	}()
	return func() { close(done); <-ended }
}

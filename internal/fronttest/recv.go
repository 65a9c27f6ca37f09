package fronttest

import (
	"testing"
	"time"
)

// Recv returns the next value of ch; it fails the test, naming what it
// waited for, when none comes within 30 seconds.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

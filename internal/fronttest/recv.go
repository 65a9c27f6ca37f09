package fronttest

import (
	"errors"
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

// RecvErr is Recv of an error that must match want (errors.Is).
func RecvErr(t testing.TB, ch <-chan error, want error, what string) {
	t.Helper()
	if err := Recv(t, ch, what); !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

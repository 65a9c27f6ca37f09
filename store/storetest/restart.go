package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// A Server is a server of the test's own, which RunRestart stops and
// starts again on the same address.
type Server struct {
	// Name is the backend's name, which starts its stores' errors
	// ("redis", "postgres").
	Name string

	// Open opens a store on the server; RunRestart closes it.
	Open func(t *testing.T) store.Store

	// Stops stop the server, each in one way (a clean shutdown, a kill),
	// and return once it has exited. RunRestart restarts the server after
	// each.
	Stops []func(t *testing.T)

	// Start starts the server again on the same address and returns once
	// it answers.
	Start func(t *testing.T)
}

// RunRestart stops the server under two stores once for each of
// srv.Stops, while a burst of every operation runs on both and a waiter on
// one waits for a result. While the server is down every operation fails
// with an error named after the backend and the operation (never
// not-found, closed or invalid argument); once it is back the same stores
// work again without being recreated, the waiter's subscription is
// resubscribed, and the waiter gets the result the other store writes
// after the last restart. Nothing is left running after Close.
func RunRestart(t *testing.T, srv Server) {
	checkNoLeaks(t)
	ctx := t.Context()
	node, resolver := srv.Open(t), srv.Open(t)
	defer node.Close()
	defer resolver.Close()

	waiter := startWaiter(t, ctx, node, "result-channel", "result")
	defer waiter.Close()
	burst := startBurst(ctx, 6, []store.Store{node, resolver}, func(w int, err error) {
		if !cleanFailure(srv.Name, err) {
			t.Errorf("worker %d: %v, want the server's error, wrapped", w, err)
		}
	})

	for round, stop := range srv.Stops {
		time.Sleep(100 * time.Millisecond) // the burst runs on a live server
		before := waiter.resubscriptions()
		stop(t)
		down := time.Now()
		checkDown(t, srv.Name, node)
		srv.Start(t)
		up := time.Now()
		t.Logf("round %d: down for %v", round, up.Sub(down).Round(time.Millisecond))

		awaitRecovery(t, round, waiter, burst, before, up, up.Add(30*time.Second))
	}
	failures := burst.Stop()
	if failures == 0 {
		t.Error("no operation of the burst failed: the server was not stopped under it")
	}
	t.Logf("%d operations of the burst failed while the server was down", failures)
	checkResult(t, resolver, waiter)
	if err := resolver.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := node.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// cleanFailure reports whether err is the error of an operation that the
// server or the connection failed: named after the backend, and none of
// the answers of the contract.
func cleanFailure(name string, err error) bool {
	return strings.HasPrefix(err.Error(), name+": ") && !errors.Is(err, store.ErrClosed) &&
		!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalidArgument)
}

// checkDown checks that every operation of s fails cleanly, under its own
// name, while the server is down.
func checkDown(t *testing.T, name string, s store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	exp := time.Now().Add(time.Minute)
	errs := map[string]error{}
	errs["put"] = s.Put(ctx, "k", []byte("v"), exp)
	_, errs["get"] = s.Get(ctx, "k")
	_, errs["take"] = s.Take(ctx, "k")
	_, errs["put if absent"] = s.PutIfAbsent(ctx, "k", []byte("v"), exp)
	_, errs["swap"] = s.Swap(ctx, "k", []byte("v"), exp)
	_, errs["compare and swap"] = s.CompareAndSwap(ctx, "k", []byte("v"), []byte("w"), exp)
	errs["delete"] = s.Delete(ctx, "k")
	_, _, errs["scan"] = s.Scan(ctx, "", 10)
	errs["publish"] = s.Publish(ctx, "c", []byte("m"))
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	extra, err := s.Subscribe(sctx, "another-channel")
	scancel()
	if err == nil {
		extra.Close()
	}
	errs["subscribe"] = err
	for op, err := range errs {
		switch {
		case err == nil:
			t.Errorf("%s with the server down succeeded", op)
		case !cleanFailure(name, err) || !strings.HasPrefix(err.Error(), name+": "+op+": "):
			t.Errorf("%s with the server down: %q, want the connection's error as %q", op, err, name+": "+op+": …")
		}
	}
}

// checkResult writes the result on resolver and announces it, and checks
// that the waiter gets it.
func checkResult(t *testing.T, resolver store.Store, waiter *waiter) {
	t.Helper()
	ctx := t.Context()
	if err := resolver.Put(ctx, "result", []byte("the answer"), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Publish(ctx, "result-channel", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if v := waiter.Result(t, 10*time.Second); string(v) != "the answer" {
		t.Fatalf("the waiter got %q", v)
	}
	waiter.Close()
}

// testTerminated cuts every connection of a store five times, during a
// burst of every operation on it and on a second store, while a waiter
// waits for a result. Operations on a cut connection fail with a wrapped
// error, at most one per connection cut; the same stores work again right
// after, the waiter is resubscribed after each round, and it gets the
// result written after the last. Nothing is left running after Close.
func testTerminated(t *testing.T, b Backend) {
	checkNoLeaks(t)
	ctx := t.Context()
	s, ns, cut := b.Open(t)
	resolver := reopen(t, b, ns, b.URL)

	waiter := startWaiter(t, ctx, s, "result-channel", "result")
	defer waiter.Close()
	burst := startBurst(ctx, 8, []store.Store{s, resolver}, func(w int, err error) {
		if !cleanFailure(b.Name, err) {
			t.Errorf("worker %d: %v, want the connection's error, wrapped", w, err)
		}
	})

	cuts := 0
	for round := range 5 {
		time.Sleep(100 * time.Millisecond) // the burst runs on live connections
		before := waiter.resubscriptions()
		n := cut.All(t)
		if n < 2 { // at least the subscription's connection and a pooled one
			t.Fatalf("round %d: cut %d connections, want every connection of the store", round, n)
		}
		cuts += n
		at := time.Now()
		awaitRecovery(t, round, waiter, burst, before, at, at.Add(15*time.Second))
	}
	failures := burst.Stop()
	t.Logf("%d operations failed on %d cut connections", failures, cuts)
	if int(failures) > cuts {
		t.Errorf("%d operations failed, more than the %d connections cut", failures, cuts)
	}
	checkResult(t, resolver, waiter)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAwait waits for an elicitation's result as a waiting call does: the
// answer another goroutine resolves, the news that a newer elicitation of
// the session replaced it, the expiry, and an answer a page of this node
// hands over without the store.
func TestAwait(t *testing.T) {
	e := newTestEngine(t, Limits{Max: 10, PerClient: 10, MaxBytes: 1 << 20, PerClientBytes: 1 << 20})
	ctx := context.Background()
	who := Identity{Subject: "alice", Session: "s:await"}
	begin := func(id string, ttl time.Duration) (*Slot, *Subscription) {
		t.Helper()
		s := e.Slot(who, id, e.Now().Add(ttl))
		sub, err := s.Begin(ctx, []byte(`{}`), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close(); s.End(ctx) })
		return s, &Subscription{Subscription: sub}
	}

	s, sub := begin("answered", time.Minute)
	go s.Resolve(ctx, &Result{Action: "accept", Content: map[string]any{"n": 1.0}})
	res, err := s.Await(ctx, s.Expiry, sub)
	if err != nil || res.Action != "accept" || res.Content["n"] != 1.0 {
		t.Fatalf("Await = %+v, %v", res, err)
	}

	s, sub = begin("replaced", time.Minute)
	go s.Resolve(ctx, &Result{Superseded: true})
	if _, err := s.Await(ctx, s.Expiry, sub); !errors.Is(err, ErrCancelled) {
		t.Fatalf("a superseded elicitation: %v, want ErrCancelled", err)
	}

	s, sub = begin("expired", 200*time.Millisecond)
	if _, err := s.Await(ctx, s.Expiry, sub); !errors.Is(err, ErrTimeout) {
		t.Fatalf("at expiry: %v, want ErrTimeout", err)
	}

	s, sub = begin("local", time.Minute)
	go func() {
		for !e.waiting.deliver(who, "local", "decline") {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if res, err := s.Await(ctx, s.Expiry, sub); err != nil || res.Action != "decline" {
		t.Fatalf("a local delivery: %+v, %v", res, err)
	}
	if e.waiting.deliver(who, "local", "accept") {
		t.Error("a second local delivery found a waiter")
	}
}

// TestWaitErr maps how a wait's context ended to the error the handler
// gets.
func TestWaitErr(t *testing.T) {
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	evicted := &alsoError{"evicted", ErrSessionEnded}
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{
		{context.Background(), ErrTimeout},
		{cancelled(ErrClosed), ErrClosed},
		{cancelled(evicted), evicted},
		{cancelled(nil), ErrClientCancelled},
	} {
		if got := WaitErr(c.ctx); got != c.want {
			t.Errorf("WaitErr = %v, want %v", got, c.want)
		}
	}
	if !errors.Is(ErrClientCancelled, context.Canceled) {
		t.Error("ErrClientCancelled does not match context.Canceled")
	}
}

// TestValidateAnswer checks an answer the way the fallback tool does:
// against the form it was asked with, bounded before decoding, with a
// schema that is not one of ours refused as an unknown elicitation.
func TestValidateAnswer(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)
	if got, err := ValidateAnswer(schema, []byte(`{"n": 3}`), 100); err != nil || got["n"] == nil {
		t.Fatalf("a valid answer: %v, %v", got, err)
	}
	if _, err := ValidateAnswer(schema, []byte(`{"n": 0}`), 100); err == nil {
		t.Error("an answer below the minimum was accepted")
	}
	if _, err := ValidateAnswer(schema, []byte(`null`), 100); err == nil {
		t.Error("a null answer to a required field was accepted")
	}
	if _, err := ValidateAnswer(schema, []byte(`{"n": 3, "pad": "`+strings.Repeat("x", 200)+`"}`), 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an answer over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := ValidateAnswer([]byte(`{"type":"array"}`), []byte(`{}`), 100); !errors.Is(err, ErrUnknownElicitation) {
		t.Errorf("a foreign schema: %v, want ErrUnknownElicitation", err)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// storeEmpty fails t unless e's store holds nothing.
func storeEmpty(t *testing.T, e *Engine, when string) {
	t.Helper()
	entries, _, err := e.store.Scan(context.Background(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("%s: the store holds %d entries, want none", when, len(entries))
	}
}

func superseded(s *Slot) bool {
	select {
	case <-s.Superseded():
		return true
	default:
		return false
	}
}

// A blocking form (a Local slot) is its session's one pending elicitation
// without the store: a second form in the session supersedes the first in
// this process, writing nothing. Forms and elicitations kept in the store
// (LLM-mediated, URL mode) supersede each other both ways.
func TestLocalSlotOnePerSession(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	who := Identity{Session: LocalSession()}
	exp := e.Now().Add(time.Minute)
	begin := func(id string, local bool) *Slot {
		t.Helper()
		s := e.Slot(who, id, exp)
		s.Local = local
		sub, err := s.Begin(ctx, []byte(`{"mode":"form"}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if sub != nil {
			t.Cleanup(func() { sub.Close() })
		}
		t.Cleanup(func() { s.End(ctx) })
		return s
	}

	first := begin("first", true)
	second := begin("second", true)
	if !superseded(first) || superseded(second) {
		t.Fatalf("after a second form: first superseded %v, second %v; want true, false", superseded(first), superseded(second))
	}
	storeEmpty(t, e, "two forms")
	first.End(ctx)
	if superseded(second) {
		t.Fatal("the end of a replaced form superseded the current one")
	}

	// A form replaced by an elicitation kept in the store.
	kept := begin("kept", false)
	if !superseded(second) {
		t.Fatal("an elicitation kept in the store did not supersede the form")
	}
	// And the reverse: a form replaces it in the store.
	third := begin("third", true)
	var res struct{ Superseded bool }
	if err := kept.Get(ctx, PurposeResult, &res); err != nil || !res.Superseded {
		t.Fatalf("the stored elicitation's result after a form = %+v, %v; want superseded", res, err)
	}
	if superseded(third) {
		t.Fatal("the new form is superseded")
	}
	kept.End(ctx)
	third.End(ctx)
	second.End(ctx)
	storeEmpty(t, e, "all ended")

	// Once the stored one ended, forms write nothing again.
	begin("fourth", true)
	begin("fifth", true)
	storeEmpty(t, e, "forms after the stored one ended")

	// Another session is not touched.
	other := e.Slot(Identity{Session: LocalSession()}, "other", exp)
	other.Local = true
	if _, err := other.Begin(ctx, []byte(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	defer other.End(ctx)
	begin("sixth", true)
	if superseded(other) {
		t.Fatal("a form of another session was superseded")
	}
}

// A blocking form is counted at the size its pending record would take,
// which it does not encode, and a form too large to park is refused as
// one of any other path would be.
func TestLocalRecordSize(t *testing.T) {
	rec := &pendingRecord{Mode: ModeForm, Tool: "delete_contacts", Expiry: time.Now().Add(time.Hour).UnixMilli(),
		Schema: []byte(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","default":false}},"required":["confirm"]}`)}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := localRecordOverhead + len(rec.Mode) + len(rec.Schema) + len(rec.Tool); got != len(b) {
		t.Errorf("reckoned %d bytes, the record's JSON is %d: %s", got, len(b), b)
	}

	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	e.cfg.MaxPendingSize = len(b) - 1
	s := e.Slot(Identity{Session: LocalSession()}, "big", time.Now().Add(time.Minute))
	s.Local = true
	if err := beginLocal(ctx, e, s, rec); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a form over MaxPendingSize: %v, want ErrTooLarge", err)
	}
	e.cfg.MaxPendingSize = len(b)
	if err := beginLocal(ctx, e, s, rec); err != nil {
		t.Fatalf("a form of MaxPendingSize: %v", err)
	}
	s.End(ctx)
}

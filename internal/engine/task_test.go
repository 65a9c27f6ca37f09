package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// A task opens only for the identity that created it: another subject,
// another session, or a task ID one bit off read as no task at all, and
// answers and cancellations for them write nothing.
func TestTaskBinding(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	alice := Identity{Subject: "alice", Session: "s:1"}
	task, rec, err := e.CreateTask(ctx, alice, time.Hour, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec.Status = TaskInputRequired
	rec.Inputs = map[string]json.RawMessage{"k": json.RawMessage(`{}`)}
	if err := task.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	flipped := []byte(task.ID)
	flipped[0] ^= 1
	keep := func(_, a json.RawMessage) (json.RawMessage, error) { return a, nil }
	for name, other := range map[string]*Task{
		"another subject": e.Task(Identity{Subject: "mallory", Session: "s:1"}, task.ID),
		"another session": e.Task(Identity{Subject: "alice", Session: "s:2"}, task.ID),
		"another task ID": e.Task(alice, string(flipped)),
	} {
		if _, err := other.View(ctx); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("%s: View: %v, want ErrUnknownTask", name, err)
		}
		if err := other.Answer(ctx, map[string]json.RawMessage{"k": json.RawMessage(`{"action":"accept"}`)}, keep); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("%s: Answer: %v, want ErrUnknownTask", name, err)
		}
		if err := other.Cancel(ctx); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("%s: Cancel: %v, want ErrUnknownTask", name, err)
		}
	}
	if _, err := task.PeekAnswer(ctx, "k"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("an answer was written: %v", err)
	}
	if c, err := task.Cancelled(ctx); err != nil || c {
		t.Fatalf("a cancellation was written: %v, %v", c, err)
	}
}

// An answer is written once: a second one for the same input request,
// before or after the runner took the first, is ErrTaskAnswered; keys the
// task did not ask are ignored; a check that fails writes nothing.
func TestTaskAnswerOnce(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	who := Identity{Subject: "alice", Session: Sessionless}
	task, rec, err := e.CreateTask(ctx, who, time.Hour, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec.Status = TaskInputRequired
	rec.Inputs = map[string]json.RawMessage{"a": json.RawMessage(`{}`), "b": json.RawMessage(`{}`)}
	if err := task.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	keep := func(_, a json.RawMessage) (json.RawMessage, error) { return a, nil }
	refuse := func(_, a json.RawMessage) (json.RawMessage, error) { return nil, errors.New("no") }
	ans := func(keys ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for _, k := range keys {
			m[k] = json.RawMessage(`"` + k + `"`)
		}
		return m
	}

	if err := task.Answer(ctx, ans("a", "b"), refuse); err == nil {
		t.Fatal("a refused answer was accepted")
	}
	if _, err := task.PeekAnswer(ctx, "a"); !errors.Is(err, ErrUnknownTask) {
		t.Fatal("a refused update wrote an answer")
	}
	if err := task.Answer(ctx, ans("a", "zz"), keep); err != nil {
		t.Fatal(err)
	}
	if _, err := task.PeekAnswer(ctx, "zz"); !errors.Is(err, ErrUnknownTask) {
		t.Fatal("an answer to a key never asked was written")
	}
	v, err := task.View(ctx)
	if err != nil || v.Status != TaskInputRequired || len(v.Inputs) != 1 || v.Inputs["b"] == nil {
		t.Fatalf("after answering a: %+v, %v; want b pending", v, err)
	}
	if err := task.Answer(ctx, ans("a"), keep); !errors.Is(err, ErrTaskAnswered) {
		t.Fatalf("answering a again before it was taken: %v", err)
	}
	// The runner lists it as answered, then takes it.
	delete(rec.Inputs, "a")
	rec.Answered = append(rec.Answered, "a")
	if err := task.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := task.TakeAnswer(ctx, "a"); err != nil || string(got) != `"a"` {
		t.Fatalf("TakeAnswer: %s, %v", got, err)
	}
	if _, err := task.TakeAnswer(ctx, "a"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("the answer was taken twice: %v", err)
	}
	if err := task.Answer(ctx, ans("a"), keep); !errors.Is(err, ErrTaskAnswered) {
		t.Fatalf("answering a again after it was taken: %v", err)
	}
	if _, err := task.PeekAnswer(ctx, "a"); !errors.Is(err, ErrUnknownTask) {
		t.Fatal("a replay wrote an answer")
	}
}

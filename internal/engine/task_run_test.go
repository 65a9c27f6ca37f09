package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// A task launched on one engine lists its input request in tasks/get,
// takes the answer tasks/update wrote (validated against the form, once)
// and completes with its body's result; another caller's update and a
// replay are refused and change nothing; a second task is refused beyond
// the client's bound until the first ended. No SDK is involved.
func TestTasksLaunch(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{Max: 10, PerClient: 1, MaxBytes: 1 << 20, PerClientBytes: 1 << 20})
	t.Cleanup(e.Close) // waits for the tasks' bodies
	alice := Identity{Subject: "alice", Session: Sessionless}
	peer := &fakePeer{info: CallInfo{Who: alice, FormMode: true}}
	input := json.RawMessage(`{"method":"elicitation/create","params":{"mode":"form","message":"OK?",` +
		`"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`)
	created, err := e.Tasks().Launch(ctx, peer, func(ctx context.Context) (json.RawMessage, error) {
		raw, err := TaskRunFrom(ctx).Input(ctx, "k", input, time.Minute, nil)
		if err != nil {
			return nil, err
		}
		var a TaskAnswer
		json.Unmarshal(raw, &a)
		return json.Marshal(map[string]any{"got": a})
	})
	if err != nil || created.ResultType != "task" || created.Status != TaskWorking {
		t.Fatalf("Launch: %+v, %v", created, err)
	}
	if _, err := e.Tasks().Launch(ctx, peer, nil); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a second task of alice: %v, want ErrTooManyPending", err)
	}
	get := func() *TaskWire {
		t.Helper()
		res, err := e.Tasks().Serve(ctx, alice, "tasks/get", created.TaskID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.(*TaskWire)
	}
	for deadline := time.Now().Add(5 * time.Second); get().Status != TaskInputRequired; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task did not ask")
		}
	}
	update := func(who Identity, answer string) error {
		_, err := e.Tasks().Serve(ctx, who, "tasks/update", created.TaskID, map[string]json.RawMessage{"k": json.RawMessage(answer)})
		return err
	}
	var ip *InvalidParamsError
	if err := update(alice, `{"action":"accept","content":{"ok":"yes"}}`); !errors.As(err, &ip) {
		t.Fatalf("an answer that does not match the form: %v, want InvalidParamsError", err)
	}
	if err := update(Identity{Subject: "mallory", Session: Sessionless}, `{"action":"accept","content":{"ok":true}}`); !errors.As(err, &ip) || !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("mallory's answer: %v, want an unknown task", err)
	}
	if err := update(alice, `{"action":"accept","content":{"ok":true}}`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); get().Status != TaskCompleted; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task did not complete")
		}
	}
	if got := string(get().Result); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("result %s, want the answer", got)
	}
	if err := update(alice, `{"action":"accept","content":{"ok":false}}`); !errors.Is(err, ErrTaskAnswered) {
		t.Fatalf("a replay: %v, want ErrTaskAnswered", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := e.Tasks().Launch(ctx, peer, func(context.Context) (json.RawMessage, error) { return nil, &RPCError{Code: -32000, Message: "no"} }); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room for a task of alice after the first ended")
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/ring"
)

// TestRotateTaskRecords: rotate rewraps a task's records (the task, with
// its pending input request, and the answer tasks/update wrote), which
// then open with the new secret alone; inspect counts them.
func TestRotateTaskRecords(t *testing.T) {
	ctx := context.Background()
	storeURL, err := withParam(backendURL(t, redisEnv), "prefix", "evclitest-"+randomName()+":")
	if err != nil {
		t.Fatal(err)
	}
	defer emptyStore(t, storeURL)
	st, err := openStore(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	limits := engine.Limits{Max: 10, PerClient: 10, MaxBytes: 1 << 20, PerClientBytes: 1 << 20}
	newEngine := func(primary string, previous ...string) *engine.Engine {
		var prev [][]byte
		for _, p := range previous {
			prev = append(prev, []byte(testSecrets[p]))
		}
		k, err := ring.New([]byte(testSecrets[primary]), prev)
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(k, st, engine.Config{Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	a := newEngine("A")
	who := engine.Identity{Subject: "ann", Session: engine.Sessionless}
	task, rec, err := a.CreateTask(ctx, who, time.Hour, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rec.Status = engine.TaskInputRequired
	rec.Inputs = map[string]json.RawMessage{"k": json.RawMessage(`{"method":"elicitation/create","params":{"message":"m"}}`)}
	if err := task.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	answer := json.RawMessage(`{"action":"accept","content":{"x":"y"}}`)
	keep := func(_, a json.RawMessage) (json.RawMessage, error) { return a, nil }
	if err := task.Answer(ctx, map[string]json.RawMessage{"k": answer}, keep); err != nil {
		t.Fatal(err)
	}

	rotated := map[string]string{"MCP_ELICITATION_SECRET": testSecrets["B"], "MCP_ELICITATION_SECRET_PREVIOUS": testSecrets["A"]}
	code, stdout, stderr := runCLI(t, rotated, "rotate", "--store", storeURL)
	if code != 0 || !strings.Contains(stdout, "rewrapped 2 records") {
		t.Fatalf("rotate: exit %d\n%s%s", code, stdout, stderr)
	}
	b := newEngine("B")
	r, err := ring.Inspect(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Records[b.Keys().PrimaryKeyID()] != 2 || len(r.Records) != 1 {
		t.Fatalf("after rotate: records per key ID %v, want the task's two under B", r.Records)
	}
	code, stdout, stderr = runCLI(t, rotated, "inspect", "--store", storeURL)
	if code != 0 || !strings.Contains(stdout, b.Keys().PrimaryKeyID().String()) {
		t.Fatalf("inspect: exit %d\n%s%s", code, stdout, stderr)
	}

	// With the new secret alone: the task and its answer open.
	moved := b.Task(who, task.ID)
	got, err := moved.Load(ctx)
	if err != nil || got.Status != engine.TaskInputRequired || len(got.Inputs) != 1 {
		t.Fatalf("the task after rotate: %+v, %v", got, err)
	}
	if a, err := moved.PeekAnswer(ctx, "k"); err != nil || string(a) != string(answer) {
		t.Fatalf("the answer after rotate: %s, %v", a, err)
	}
	// And not with the old one alone.
	if _, err := newEngine("A").Task(who, task.ID).Load(ctx); err == nil {
		t.Fatal("the old secret alone still opens the task after rotate")
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/store"
)

// The purposes of a task's records (the tasks extension,
// io.modelcontextprotocol/tasks). Like an elicitation's, every one is
// sealed for a binding to the subject, the session and the task ID,
// under a blinded key; an answer's record ID adds the input request's
// key.
const (
	PurposeTask        = "task/record"  // the task: status, input requests, result or error
	PurposeTaskAnswer  = "task/answer"  // the answer to one input request, until its runner takes it
	PurposeTaskCancel  = "task/cancel"  // the request to cancel it
	PurposeTaskChannel = "task/channel" // announces an answer or a cancellation to its runner
)

// A task's status.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

var (
	// ErrUnknownTask is a task that does not exist (any more), or that
	// belongs to another session or subject: one error, so that a caller
	// learns nothing of other callers' tasks.
	ErrUnknownTask = errors.New("elicit: unknown task")

	// ErrTaskAnswered is an answer to an input request of a task that was
	// answered already: a replay, refused.
	ErrTaskAnswered = errors.New("elicit: input request already answered")
)

// TaskRecord is what the store keeps of a task, sealed. Its runner (the
// node that runs the tool handler) alone writes it.
type TaskRecord struct {
	Status  string `json:"status"`
	Message string `json:"statusMessage,omitempty"`
	Created int64  `json:"created"` // Unix ms
	Updated int64  `json:"updated"` // Unix ms
	TTL     int64  `json:"ttl"`     // ms
	Poll    int64  `json:"poll,omitempty"`

	// Inputs are the pending input requests, by key: each the JSON of an
	// input request ({"method": ..., "params": ...}) as the client sees it.
	Inputs map[string]json.RawMessage `json:"inputs,omitempty"`
	// Answered are the keys of the input requests answered so far.
	Answered []string `json:"answered,omitempty"`

	// Result is the tool's result (completed), Error the JSON-RPC error
	// (failed).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Terminal reports whether the task has ended.
func (r *TaskRecord) Terminal() bool {
	switch r.Status {
	case TaskCompleted, TaskFailed, TaskCancelled:
		return true
	}
	return false
}

// Task is one task's place in the store.
type Task struct {
	e      *Engine
	Who    Identity
	ID     string
	Expiry time.Time
}

// Task returns the place of task id of the caller who. Its expiry is
// known once Load or CreateTask read or wrote its record.
func (e *Engine) Task(who Identity, id string) *Task {
	return &Task{e: e, Who: who, ID: id}
}

// CreateTask writes the record of a new task of who, working, kept for
// ttl, and returns it once it is durable: a read on any node finds it.
func (e *Engine) CreateTask(ctx context.Context, who Identity, ttl, poll time.Duration) (*Task, *TaskRecord, error) {
	if ttl <= 0 {
		return nil, nil, errors.New("engine: CreateTask needs a positive TTL")
	}
	now := e.Now()
	t := &Task{e: e, Who: who, ID: RandomID(), Expiry: now.Add(ttl)}
	rec := &TaskRecord{
		Status:  TaskWorking,
		Created: now.UnixMilli(),
		Updated: now.UnixMilli(),
		TTL:     ttl.Milliseconds(),
		Poll:    poll.Milliseconds(),
	}
	if err := t.Save(ctx, rec); err != nil {
		return nil, nil, err
	}
	return t, rec, nil
}

func (t *Task) binding(purpose, key string) envelope.Binding {
	id := t.ID
	if key != "" {
		id += "/" + key
	}
	return t.Who.Binding(purpose, id)
}

// Channel is the blinded name of the channel the task's runner listens
// on, under the primary secret.
func (t *Task) Channel() string {
	return "ev:" + t.e.keys.StoreKey(t.binding(PurposeTaskChannel, ""))
}

// Subscribe subscribes to the task's channel.
func (t *Task) Subscribe(ctx context.Context) (store.Subscription, error) {
	sub, err := t.e.store.Subscribe(ctx, t.Channel())
	if err != nil {
		return nil, &StoreError{err}
	}
	return sub, nil
}

// publish announces an answer or a cancellation under every secret.
func (t *Task) publish(ctx context.Context) {
	for _, key := range t.e.keys.StoreKeys(t.binding(PurposeTaskChannel, "")) {
		t.e.store.Publish(ctx, "ev:"+key, []byte{1})
	}
}

// Save seals rec and writes it as the task's record, under the primary
// secret, removing a copy under an older one. Only the task's runner
// calls it.
func (t *Task) Save(ctx context.Context, rec *TaskRecord) error {
	pt, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	b := t.binding(PurposeTask, "")
	sealed, err := t.e.keys.SealRecord(b, pt, t.Expiry)
	clear(pt)
	if err != nil {
		return err
	}
	keys := t.e.keys.StoreKeys(b)
	if err := t.e.store.Put(ctx, keys[0], sealed, t.Expiry); err != nil {
		return &StoreError{err}
	}
	for _, key := range keys[1:] {
		t.e.store.Delete(ctx, key)
	}
	return nil
}

// Load reads and opens the task's record. A task that is not there, does
// not open (another subject's or session's, tampered, under a dropped
// secret) or has expired is ErrUnknownTask; a store that fails is a
// *StoreError.
func (t *Task) Load(ctx context.Context) (*TaskRecord, error) {
	var rec TaskRecord
	if err := t.get(ctx, PurposeTask, "", &rec); err != nil {
		return nil, err
	}
	t.Expiry = time.UnixMilli(rec.Created + rec.TTL)
	return &rec, nil
}

func (t *Task) get(ctx context.Context, purpose, key string, v any) error {
	b := t.binding(purpose, key)
	raw, err := t.e.keys.Lookup(ctx, t.e.store, b)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownTask
	}
	if err != nil {
		return &StoreError{err}
	}
	pt, err := t.e.keys.OpenRecord(b, raw)
	if err != nil {
		return ErrUnknownTask
	}
	defer clear(pt)
	if json.Unmarshal(pt, v) != nil {
		return ErrUnknownTask
	}
	return nil
}

// View is the task as a client sees it (tasks/get), on any node: its
// record, less the input requests answered since the runner last wrote
// it, and cancelled once a cancellation was asked of a task that had not
// ended.
func (t *Task) View(ctx context.Context) (*TaskRecord, error) {
	rec, err := t.Load(ctx)
	if err != nil {
		return nil, err
	}
	if rec.Terminal() {
		return rec, nil
	}
	if cancelled, err := t.Cancelled(ctx); err != nil {
		return nil, err
	} else if cancelled {
		rec.Status, rec.Inputs = TaskCancelled, nil
		return rec, nil
	}
	for key := range rec.Inputs {
		var v json.RawMessage
		switch err := t.get(ctx, PurposeTaskAnswer, key, &v); {
		case err == nil:
			delete(rec.Inputs, key)
		case !errors.Is(err, ErrUnknownTask):
			return nil, err
		}
	}
	if rec.Status == TaskInputRequired && len(rec.Inputs) == 0 {
		rec.Status = TaskWorking
	}
	return rec, nil
}

// Answer writes answers to the task's pending input requests (tasks/update),
// for its runner to take, and announces them. Keys the task never asked
// are ignored. check validates an answer against the input request it
// answers and returns what to keep; the first error refuses the whole
// update with nothing written. An input request answered already (a
// replay) is ErrTaskAnswered.
func (t *Task) Answer(ctx context.Context, answers map[string]json.RawMessage, check func(input, answer json.RawMessage) (json.RawMessage, error)) error {
	rec, err := t.Load(ctx)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(answers))
	for key := range answers {
		if slices.Contains(rec.Answered, key) {
			return ErrTaskAnswered
		}
		if _, ok := rec.Inputs[key]; ok && !rec.Terminal() {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	kept := make(map[string][]byte, len(keys))
	for _, key := range keys {
		var v json.RawMessage
		switch err := t.get(ctx, PurposeTaskAnswer, key, &v); {
		case err == nil:
			return ErrTaskAnswered
		case !errors.Is(err, ErrUnknownTask):
			return err
		}
		a, err := check(rec.Inputs[key], answers[key])
		if err != nil {
			return err
		}
		b := t.binding(PurposeTaskAnswer, key)
		if kept[key], err = t.e.keys.SealRecord(b, a, t.Expiry); err != nil {
			return err
		}
	}
	for _, key := range keys {
		ok, err := t.e.store.PutIfAbsent(ctx, t.e.keys.StoreKey(t.binding(PurposeTaskAnswer, key)), kept[key], t.Expiry)
		if err != nil {
			return &StoreError{err}
		}
		if !ok {
			return ErrTaskAnswered
		}
	}
	if len(keys) > 0 {
		t.publish(ctx)
	}
	return nil
}

// PeekAnswer reads the answer to input request key, if there is one,
// without taking it: ErrUnknownTask when there is none.
func (t *Task) PeekAnswer(ctx context.Context, key string) (json.RawMessage, error) {
	var v json.RawMessage
	if err := t.get(ctx, PurposeTaskAnswer, key, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// TakeAnswer takes the answer to input request key: it is then gone from
// the store. The runner calls it once it has saved the record that lists
// key as answered, so that no replay can write it again.
func (t *Task) TakeAnswer(ctx context.Context, key string) (json.RawMessage, error) {
	b := t.binding(PurposeTaskAnswer, key)
	raw, err := t.e.keys.Take(ctx, t.e.store, b)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnknownTask
	}
	if err != nil {
		return nil, &StoreError{err}
	}
	pt, err := t.e.keys.OpenRecord(b, raw)
	if err != nil {
		return nil, ErrUnknownTask
	}
	return pt, nil
}

// Cancel asks the task's runner to cancel it (tasks/cancel). A task that
// has ended is left as it is.
func (t *Task) Cancel(ctx context.Context) error {
	rec, err := t.Load(ctx)
	if err != nil {
		return err
	}
	if rec.Terminal() {
		return nil
	}
	b := t.binding(PurposeTaskCancel, "")
	sealed, err := t.e.keys.SealRecord(b, []byte(`{}`), t.Expiry)
	if err != nil {
		return err
	}
	if _, err := t.e.store.PutIfAbsent(ctx, t.e.keys.StoreKey(b), sealed, t.Expiry); err != nil {
		return &StoreError{err}
	}
	t.publish(ctx)
	return nil
}

// Cancelled reports whether a cancellation of the task was asked.
func (t *Task) Cancelled(ctx context.Context) (bool, error) {
	var v json.RawMessage
	switch err := t.get(ctx, PurposeTaskCancel, "", &v); {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrUnknownTask):
		return false, nil
	default:
		return false, err
	}
}

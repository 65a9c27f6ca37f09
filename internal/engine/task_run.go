package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// This file is a task that runs on this node: Tasks.Launch creates it and
// runs its body in the background; the body's elicitations list their
// input requests in the task and wait for the answers tasks/update writes
// on any node (TaskRun.Input).

// TaskBody is the work of a task: the tool's handler, run with ctx (which
// carries the TaskRun, TaskRunFrom). It returns the tool's result as JSON,
// or an error: an *RPCError is the task's error as it is, any other error
// an internal error that says nothing of its cause.
type TaskBody func(ctx context.Context) (result json.RawMessage, err error)

// errTaskCancelled ends the body of a task that was cancelled.
var errTaskCancelled = errors.New("elicit: the task was cancelled")

// taskPollEvery is how often a task's runner reads the store when no
// announcement comes.
var taskPollEvery = 5 * time.Second

// tasksRunning counts the tasks running on this node, in total and per
// client, against the pending quotas' bounds (Limits.Max, PerClient).
type tasksRunning struct {
	mu     sync.Mutex
	total  int
	client map[string]int
}

// admit counts a task of client, or refuses it beyond max in total or
// perClient for the client.
func (tr *tasksRunning) admit(client string, max, perClient int) (release func(), err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.total >= max || tr.client[client] >= perClient {
		return nil, ErrTooManyPending
	}
	if tr.client == nil {
		tr.client = map[string]int{}
	}
	tr.total++
	tr.client[client]++
	return func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.total--
		if tr.client[client]--; tr.client[client] <= 0 {
			delete(tr.client, client)
		}
	}, nil
}

// Tasks is the tasks extension of an Engine: what a front-end calls to
// run a tool call as a task (Launch) and to answer tasks/* (Serve).
type Tasks struct{ e *Engine }

// Tasks returns the engine's tasks extension.
func (e *Engine) Tasks() Tasks { return Tasks{e} }

// Launch creates a task of the call p that runs body, and returns the
// task as the client sees it (a CreateTaskResult) once it is in the store.
// The body runs in the background with a context that carries p and
// ctx's values, not its cancellation (the call's context may end as soon
// as the front-end answered): it ends when the task is cancelled (on any
// node), when its TTL passes, or on Close and EndCalls. A node runs at
// most Limits.Max tasks at once, Limits.PerClient of one client
// (Identity.Client); a call beyond either is ErrTooManyPending, before
// anything is written.
func (ts Tasks) Launch(ctx context.Context, p Peer, body TaskBody) (*TaskWire, error) {
	e := ts.e
	info := p.Call()
	release, err := e.tasks.admit(info.Who.Client(info.ClientID), e.quota.Max, e.quota.PerClient)
	if err != nil {
		return nil, err
	}
	ctx = WithPeer(e.cfg.prepare(context.WithoutCancel(ctx)), p)
	tctx, untrack, err := e.Track(ctx, info.Who)
	if err != nil {
		release()
		return nil, err
	}
	done := func() { untrack(); release() }
	t, rec, err := e.CreateTask(ctx, info.Who, DefaultTaskTTL, TaskPollInterval)
	if err != nil {
		done()
		return nil, err
	}
	sub, err := t.Subscribe(ctx)
	if err != nil {
		done()
		return nil, err
	}
	run := &TaskRun{t: t, rec: rec, wake: make(chan struct{})}
	created := wireTask(t.ID, "task", rec)
	go func() {
		defer done()
		defer sub.Close()
		run.run(tctx, sub, body)
	}()
	return created, nil
}

// TaskRun is a task whose body runs on this node: it alone writes the
// task's record.
type TaskRun struct {
	t   *Task
	mu  sync.Mutex
	rec *TaskRecord

	wakeMu sync.Mutex
	wake   chan struct{} // closed on every announcement, then replaced
}

type taskRunKey struct{}

// TaskRunFrom returns the task whose body ctx runs, or nil.
func TaskRunFrom(ctx context.Context) *TaskRun {
	r, _ := ctx.Value(taskRunKey{}).(*TaskRun)
	return r
}

// Task returns the task's place in the store.
func (r *TaskRun) Task() *Task { return r.t }

// woken returns the channel the next announcement closes.
func (r *TaskRun) woken() <-chan struct{} {
	r.wakeMu.Lock()
	defer r.wakeMu.Unlock()
	return r.wake
}

func (r *TaskRun) signal() {
	r.wakeMu.Lock()
	close(r.wake)
	r.wake = make(chan struct{})
	r.wakeMu.Unlock()
}

// update changes the record and writes it.
func (r *TaskRun) update(ctx context.Context, f func(*TaskRecord)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.rec)
	r.rec.Updated = r.t.e.Now().UnixMilli()
	return r.t.Save(context.WithoutCancel(ctx), r.rec)
}

// run runs the body of the task, watching the store for its answers and
// its cancellation, and writes how it ended.
func (r *TaskRun) run(ctx context.Context, sub store.Subscription, body TaskBody) {
	// The body ends with the task's TTL, after which nothing of the task
	// is kept.
	ctx, stop := context.WithDeadlineCause(ctx, r.t.Expiry, ErrTimeout)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		r.watch(ctx, sub, cancel)
	}()
	defer func() { cancel(nil); <-watched }()

	result, err := r.call(context.WithValue(ctx, taskRunKey{}, r), body)
	cancelled := context.Cause(ctx) == errTaskCancelled
	if !cancelled {
		cancelled, _ = r.t.Cancelled(context.WithoutCancel(ctx))
	}
	if cancelled {
		r.update(ctx, func(rec *TaskRecord) { rec.Status, rec.Inputs = TaskCancelled, nil })
		return
	}
	var failure json.RawMessage
	if err != nil {
		failure = taskError(err)
	}
	r.update(ctx, func(rec *TaskRecord) {
		rec.Inputs = nil
		if failure != nil {
			rec.Status, rec.Error = TaskFailed, failure
		} else {
			rec.Status, rec.Result = TaskCompleted, result
		}
	})
}

// call runs the body; a panic fails the task, and its stack goes to the
// engine's log.
func (r *TaskRun) call(ctx context.Context, body TaskBody) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.t.e.cfg.Logger.Error("elicit: a task's tool handler panicked", "stack", string(debug.Stack()))
			res, err = nil, errors.New("panic")
		}
	}()
	return body(ctx)
}

// taskError is the JSON-RPC error of a failed task: an *RPCError as it
// is, anything else an internal error that says nothing of its cause.
func taskError(err error) json.RawMessage {
	var re *RPCError
	if !errors.As(err, &re) {
		re = &RPCError{Code: -32603, Message: "internal error"}
	}
	b, _ := json.Marshal(struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{re.Code, re.Message, re.Data})
	return b
}

// watch wakes the task's input waiters on every announcement, and every
// few seconds for those lost, and cancels the body once a cancellation
// was asked.
func (r *TaskRun) watch(ctx context.Context, sub store.Subscription, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(taskPollEvery)
	defer tick.Stop()
	msgs := sub.Messages()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-msgs:
			if !ok {
				msgs = nil // the subscription ended: poll only
			}
		case <-tick.C:
		}
		if cancelled, _ := r.t.Cancelled(ctx); cancelled {
			cancel(errTaskCancelled)
			return
		}
		r.signal()
	}
}

// Input lists input, the JSON of an input request ({"method": ...,
// "params": ...}), under key in the task's record (input_required), and
// waits at most ttl for its answer, which tasks/update writes on any node
// and Input takes once: the answer is a TaskAnswer's JSON, which the
// caller clears once read. page, when not nil, is a URL-mode
// elicitation's page: its error, or nil once the page was answered (an
// accept in tasks/update waits for it; Input then returns a nil answer).
// After ttl it is ErrTimeout, and the input request is gone.
func (r *TaskRun) Input(ctx context.Context, key string, input json.RawMessage, ttl time.Duration, page <-chan error) (json.RawMessage, error) {
	err := r.update(ctx, func(rec *TaskRecord) {
		if rec.Inputs == nil {
			rec.Inputs = map[string]json.RawMessage{}
		}
		rec.Inputs[key] = input
		rec.Status = TaskInputRequired
	})
	if err != nil {
		return nil, err
	}
	// answered lists key as answered first, so that no replay writes an
	// answer again, then takes the answer written, if any: used once.
	answered := func() (json.RawMessage, error) {
		err := r.update(ctx, func(rec *TaskRecord) {
			delete(rec.Inputs, key)
			rec.Answered = append(rec.Answered, key)
			if len(rec.Inputs) == 0 {
				rec.Status = TaskWorking
			}
		})
		if err != nil {
			return nil, err
		}
		return r.t.TakeAnswer(ctx, key)
	}
	timeout := time.NewTimer(ttl)
	defer timeout.Stop()
	for {
		woken := r.woken()
		if raw, err := r.t.PeekAnswer(ctx, key); err == nil {
			var a TaskAnswer
			if json.Unmarshal(raw, &a) != nil {
				return nil, ErrUnknownTask
			}
			// A URL-mode elicitation accepted in tasks/update is answered
			// on its page: wait for that.
			if page == nil || a.Action != "accept" {
				return answered()
			}
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timeout.C:
			r.update(ctx, func(rec *TaskRecord) {
				delete(rec.Inputs, key)
				if len(rec.Inputs) == 0 && rec.Status == TaskInputRequired {
					rec.Status = TaskWorking
				}
			})
			return nil, ErrTimeout
		case err := <-page:
			if err != nil {
				return nil, err
			}
			if _, err := answered(); err != nil && !errors.Is(err, ErrUnknownTask) {
				return nil, err
			}
			return nil, nil
		case <-woken:
		}
	}
}

// Ask delivers q, an elicitation of the task's body, as an input request
// of the task (Ask.Task): it lists it (Input) and waits at most q.TTL for
// the answer tasks/update writes on any node. A URL-mode elicitation is
// answered on its page (whose callback may reach any node), or declined
// with tasks/update.
func (r *TaskRun) Ask(ctx context.Context, q *Ask) (*Response, error) {
	e := r.t.e
	p := q.Params()
	var page chan error
	var onPage *Response
	switch q.Mode {
	case ModeForm:
	case ModeURL:
		link, s, err := pendURL(ctx, e, q)
		if err != nil {
			return nil, err
		}
		defer s.End(ctx)
		p.URL, p.ElicitationID = link, q.ID
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		page = make(chan error, 1)
		go func() {
			res, _, err := awaitURL(pctx, e, q, 0) // a task waits until the TTL
			onPage = res
			page <- err
		}()
	default:
		return nil, fmt.Errorf("elicit: a task cannot ask in mode %q", q.Mode)
	}
	input, err := json.Marshal(struct {
		Method string        `json:"method"`
		Params *ElicitParams `json:"params"`
	}{"elicitation/create", p})
	if err != nil {
		return nil, err
	}
	raw, err := r.Input(ctx, q.InputKey(), input, q.TTL, page)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return onPage, nil // answered on the page
	}
	defer clear(raw)
	var a TaskAnswer
	if json.Unmarshal(raw, &a) != nil {
		return nil, ErrMalformed
	}
	return &Response{Action: a.Action, Content: a.Content}, nil
}

package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TasksExtension is the name of the tasks extension (SEP-2663) in the
// capabilities' extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// DefaultTaskTTL is how long a task, its input requests and its result
// are kept, from its creation.
const DefaultTaskTTL = time.Hour

// taskPollInterval is the interval between two tasks/get a task suggests
// to its client.
const taskPollInterval = time.Second

// TaskSupport says how a tool runs as a task (RunAsTask).
type TaskSupport string

const (
	// TaskOptional runs the tool as a task for a client that negotiated
	// the tasks extension, and as a plain tool call for one that did not.
	TaskOptional TaskSupport = "optional"
	// TaskRequired runs the tool as a task, and refuses a client that did
	// not negotiate the extension with the JSON-RPC error -32021.
	TaskRequired TaskSupport = "required"
)

// taskTable is what an Elicitor knows of tasks: the tools that run as
// tasks, and the servers it serves tasks/* on.
type taskTable struct {
	mu      sync.Mutex
	tools   map[string]TaskSupport
	servers map[*mcp.Server]bool
	running map[string]int // client → its tasks running on this node
	total   int
}

// The bounds of the tasks a node runs at once, in total and per client
// (as the pending quotas count clients): DefaultMaxPending and
// DefaultMaxPendingPerSubject.
var maxTasks, maxTasksPerClient = DefaultMaxPending, DefaultMaxPendingPerSubject

// admit counts a task of client, or refuses it beyond the bounds.
func (tt *taskTable) admit(client string) (release func(), err error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.total >= maxTasks || tt.running[client] >= maxTasksPerClient {
		return nil, ErrTooManyPending
	}
	if tt.running == nil {
		tt.running = map[string]int{}
	}
	tt.total++
	tt.running[client]++
	return func() {
		tt.mu.Lock()
		defer tt.mu.Unlock()
		tt.total--
		if tt.running[client]--; tt.running[client] <= 0 {
			delete(tt.running, client)
		}
	}, nil
}

func (tt *taskTable) support(tool string) (TaskSupport, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	s, ok := tt.tools[tool]
	return s, ok
}

func (tt *taskTable) enabled() bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.tools) > 0
}

// RunAsTask makes every call of the tool named tool, on a server s the
// Elicitor is installed on, run as a task of the tasks extension
// (io.modelcontextprotocol/tasks) when the client negotiated it, per
// request or for its session: the call returns at once a task, which the
// client polls with tasks/get and may cancel with tasks/cancel, while the
// handler runs in the background. It also serves tasks/get, tasks/update
// and tasks/cancel on s, and advertises the extension.
//
// Within a task, Form and Confirm do not wait on the call: the task's
// status becomes input_required, tasks/get lists the input request, and
// the answer comes with tasks/update, on any node. What a task keeps (its
// input requests, the answers, its result) is sealed in the store, bound
// to the task ID, the subject and the session; an answer is validated
// against the schema it was asked with before it is written, and is used
// once.
//
// A task is kept for DefaultTaskTTL. Its handler runs on the node that
// received the call, with a context that ends when the task is cancelled,
// when its TTL passes, or when the Elicitor is closed. A node runs at most
// DefaultMaxPending tasks at once, DefaultMaxPendingPerSubject of one
// client (counted as the pending quotas count clients); a call beyond
// either fails with ErrTooManyPending before anything is written.
func (e *Elicitor) RunAsTask(s *mcp.Server, tool string, support TaskSupport) error {
	if support != TaskOptional && support != TaskRequired {
		return errors.New("elicit: RunAsTask needs TaskOptional or TaskRequired")
	}
	tt := &e.tasks
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.tools == nil {
		tt.tools = map[string]TaskSupport{}
		tt.servers = map[*mcp.Server]bool{}
	}
	tt.tools[tool] = support
	if tt.servers[s] {
		return nil
	}
	// The handlers are never reached: the receiving middleware answers
	// tasks/* first. Registering makes the go-sdk accept the methods.
	unreachable := func(context.Context, *mcp.ServerSession, *taskParams) (*taskAck, error) {
		return nil, ErrNotInstalled
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if err := mcp.AddReceivingCustomMethod(s, m, unreachable); err != nil {
			return err
		}
	}
	tt.servers[s] = true
	return nil
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskAck is the empty result of tasks/update and tasks/cancel.
type taskAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskResult is a task on the wire: CreateTaskResult (resultType "task")
// and the DetailedTask of tasks/get (resultType "complete").
type taskResult struct {
	mcp.ResultBase
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          int64                      `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          json.RawMessage            `json:"error,omitempty"`
}

func wireTask(id, resultType string, rec *engine.TaskRecord) *taskResult {
	ms := func(t int64) string { return time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z") }
	return &taskResult{
		ResultType: resultType, TaskID: id, Status: rec.Status, StatusMessage: rec.Message,
		CreatedAt: ms(rec.Created), LastUpdatedAt: ms(rec.Updated),
		TTLMs: rec.TTL, PollIntervalMs: rec.Poll,
		InputRequests: rec.Inputs, Result: rec.Result, Error: rec.Error,
	}
}

// tasksNegotiated reports whether the client of a request declared the
// tasks extension: in the request's _meta (SEP-2575), else at
// initialize.
func tasksNegotiated(ss *mcp.ServerSession, meta mcp.Meta) bool {
	if meta != nil {
		if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
			var c struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			b, err := json.Marshal(raw)
			if err != nil || json.Unmarshal(b, &c) != nil {
				return false
			}
			_, ok := c.Extensions[TasksExtension]
			return ok
		}
	}
	if ss == nil {
		return false
	}
	if init := ss.InitializeParams(); init != nil && init.Capabilities != nil {
		_, ok := init.Capabilities.Extensions[TasksExtension]
		return ok
	}
	return false
}

// errNoTasks is -32021 for a client that did not negotiate the extension.
func errNoTasks() error {
	data, _ := json.Marshal(map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}},
	})
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "the client did not declare the " + TasksExtension + " extension",
		Data:    data,
	}
}

var errUnknownTask = invalidParams("unknown task")

// advertiseTasks adds the tasks extension to the server's capabilities in
// the result of initialize or server/discover.
func (pa *taskPath) advertiseTasks(res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	if err != nil || !e.tasks.enabled() {
		return res, err
	}
	add := func(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
		var out mcp.ServerCapabilities
		if c != nil {
			out = *c
		}
		ext := map[string]any{}
		for k, v := range out.Extensions {
			ext[k] = v
		}
		out.Extensions = ext
		out.AddExtension(TasksExtension, nil)
		return &out
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		out := *r
		out.Capabilities = add(r.Capabilities)
		return &out, nil
	case *mcp.DiscoverResult:
		r.Capabilities = add(r.Capabilities)
		return r, nil
	}
	return res, err
}

// taskIdentity is the identity of a tasks/* request, as a tool call's.
func (pa *taskPath) taskIdentity(req mcp.Request) (engine.Identity, bool) {
	e := pa.e
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return engine.Identity{}, false
	}
	return e.sdk.identity(&mcp.CallToolRequest{Session: ss, Extra: req.GetExtra()}), true
}

// serveTask answers tasks/get, tasks/update and tasks/cancel, on any node.
func (pa *taskPath) serveTask(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	e := pa.e
	p, ok := req.GetParams().(*taskParams)
	if !ok || !e.tasks.enabled() {
		return next(ctx, method, req)
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if !tasksNegotiated(ss, p.GetMeta()) {
		return nil, errNoTasks()
	}
	who, ok := e.task.taskIdentity(req)
	if !ok || p.TaskID == "" {
		return nil, errUnknownTask
	}
	t := e.engine.Task(who, p.TaskID)
	var err error
	switch method {
	case "tasks/get":
		var rec *engine.TaskRecord
		if rec, err = t.View(ctx); err == nil {
			return wireTask(t.ID, "complete", rec), nil
		}
	case "tasks/update":
		err = t.Answer(ctx, p.InputResponses, e.task.checkTaskAnswer)
	case "tasks/cancel":
		err = t.Cancel(ctx)
	}
	var se *engine.StoreError
	switch {
	case err == nil:
		return &taskAck{ResultType: "complete"}, nil
	case errors.Is(err, engine.ErrUnknownTask):
		return nil, errUnknownTask
	case errors.Is(err, engine.ErrTaskAnswered):
		return nil, invalidParams("input request already answered")
	case errors.As(err, &se):
		return nil, err
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return nil, je
	}
	return nil, invalidParams(err.Error())
}

// checkTaskAnswer validates an input response against the input request
// it answers, and returns the answer to keep: the action, and for accept
// the content normalized by the schema.
func (pa *taskPath) checkTaskAnswer(input, answer json.RawMessage) (json.RawMessage, error) {
	e := pa.e
	var in struct {
		Params struct {
			Mode            string          `json:"mode"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		} `json:"params"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("elicit: task input request does not decode")
	}
	var a struct {
		Action  Action          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, invalidParams("input response is not an elicitation result")
	}
	out := taskAnswer{Action: a.Action}
	switch a.Action {
	case Decline, Cancel:
	case Accept:
		if in.Params.Mode == string(ModeURL) {
			break
		}
		if len(a.Content) > e.maxSize {
			return nil, invalidParams("content larger than the size limit")
		}
		s, err := ParseSchema(in.Params.RequestedSchema)
		if err != nil {
			return nil, err
		}
		if out.Content, err = s.ValidateJSON(a.Content); err != nil {
			return nil, invalidParams(err.Error())
		}
	default:
		return nil, invalidParams("input response has no valid action")
	}
	return json.Marshal(out)
}

// taskAnswer is an answer to a task's input request, as kept sealed.
type taskAnswer struct {
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type taskKey struct{}

// taskRun is a task whose handler runs on this node: it alone writes the
// task's record.
type taskRun struct {
	e   *Elicitor
	t   *engine.Task
	mu  sync.Mutex
	rec *engine.TaskRecord

	wakeMu sync.Mutex
	wake   chan struct{} // closed on every announcement, then replaced
}

func taskFrom(ctx context.Context) *taskRun {
	r, _ := ctx.Value(taskKey{}).(*taskRun)
	return r
}

// woken returns the channel the next announcement closes.
func (r *taskRun) woken() <-chan struct{} {
	r.wakeMu.Lock()
	defer r.wakeMu.Unlock()
	return r.wake
}

func (r *taskRun) signal() {
	r.wakeMu.Lock()
	close(r.wake)
	r.wake = make(chan struct{})
	r.wakeMu.Unlock()
}

// update changes the record and writes it.
func (r *taskRun) update(ctx context.Context, f func(*engine.TaskRecord)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.rec)
	r.rec.Updated = r.e.engine.Now().UnixMilli()
	return r.t.Save(context.WithoutCancel(ctx), r.rec)
}

var errTaskCancelled = errors.New("elicit: the task was cancelled")

// startTask runs a tools/call as a task, when its tool runs as one and the
// client negotiated the extension; ok is false when the call is not a
// task's.
func (pa *taskPath) startTask(ctx context.Context, c *Call, req *mcp.CallToolRequest, next func(context.Context) (mcp.Result, error)) (_ mcp.Result, _ error, ok bool) {
	e := pa.e
	support, ok := e.tasks.support(req.Params.Name)
	if !ok {
		return nil, nil, false
	}
	if !tasksNegotiated(req.Session, req.Params.GetMeta()) {
		if support == TaskRequired {
			return nil, errNoTasks(), true
		}
		return nil, nil, false
	}
	return e.task.launch(ctx, c, func(ctx context.Context) (mcp.Result, error) { return next(ctx) })
}

// launch creates a task of the call req that runs body, and returns the
// CreateTaskResult once the task is in the store.
func (pa *taskPath) launch(ctx context.Context, c *Call, body func(context.Context) (mcp.Result, error)) (_ mcp.Result, _ error, ok bool) {
	e := pa.e
	who := c.who
	release, err := e.tasks.admit(who.Client(c.info.ClientID))
	if err != nil {
		return nil, err, true
	}
	// The task outlives the call, whose context may end as soon as the
	// handler returned (StartTask).
	ctx = context.WithoutCancel(ctx)
	tctx, untrack, err := e.engine.Track(ctx, who)
	if err != nil {
		release()
		return nil, err, true
	}
	done := func() { untrack(); release() }
	t, rec, err := e.engine.CreateTask(ctx, who, DefaultTaskTTL, taskPollInterval)
	if err != nil {
		done()
		return nil, err, true
	}
	sub, err := t.Subscribe(ctx)
	if err != nil {
		done()
		return nil, err, true
	}
	run := &taskRun{e: e, t: t, rec: rec, wake: make(chan struct{})}
	created := wireTask(t.ID, "task", rec)
	go func() {
		defer done()
		defer sub.Close()
		run.run(tctx, sub, body)
	}()
	return created, nil, true
}

// taskStart is what StartTask returns for the middleware: the work to run
// as a task.
type taskStart struct {
	work func(context.Context) (*mcp.CallToolResult, error)
}

func (*taskStart) Error() string {
	return "elicit: the tool call continues as a task (return StartTask's error unchanged)"
}

// StartTask continues the tool call of ctx as a task that runs work, for
// a handler that decides on its own, after gathering input, say, that the
// rest takes long: the handler returns what StartTask returns, unchanged,
// and the client gets the task (a CreateTaskResult) while work runs in
// the background as RunAsTask describes. A client that did not negotiate
// the tasks extension gets work's result once it has run, as the call's
// result; so does every client of a server without RunAsTask, for which
// StartTask runs work before it returns.
func StartTask(ctx context.Context, work func(ctx context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	e, err := fromContext(ctx)
	if err != nil || !e.tasks.enabled() {
		return work(ctx)
	}
	return nil, &taskStart{work: work}
}

// escalate answers a call whose handler returned StartTask's error with a
// task that runs its work.
func (pa *taskPath) escalate(ctx context.Context, c *Call, req *mcp.CallToolRequest) func(mcp.Result, error) (mcp.Result, error) {
	e := pa.e
	return func(res mcp.Result, err error) (mcp.Result, error) { return e.task.escalated(ctx, c, req, res, err) }
}

func (pa *taskPath) escalated(ctx context.Context, c *Call, req *mcp.CallToolRequest, res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	cause := err
	if tr, ok := res.(*mcp.CallToolResult); ok && tr != nil && cause == nil {
		cause = tr.GetError()
	}
	var ts *taskStart
	if !errors.As(cause, &ts) {
		return res, err
	}
	work := func(ctx context.Context) (mcp.Result, error) {
		r, err := ts.work(ctx)
		if r == nil && err == nil {
			r = &mcp.CallToolResult{}
		}
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				return nil, err
			}
			// A tool's error, as the go-sdk reports one.
			r = &mcp.CallToolResult{}
			r.SetError(err)
		}
		return r, nil
	}
	if !tasksNegotiated(req.Session, req.Params.GetMeta()) {
		return work(ctx)
	}
	res, err, _ = e.task.launch(ctx, c, work)
	return res, err
}

// run runs the handler of the task, watching the store for its answers
// and its cancellation, and writes how it ended.
func (r *taskRun) run(ctx context.Context, sub store.Subscription, next func(context.Context) (mcp.Result, error)) {
	// The handler ends with the task's TTL, after which nothing of the
	// task is kept.
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

	res, err := r.call(context.WithValue(ctx, taskKey{}, r), next)
	if context.Cause(ctx) == errTaskCancelled {
		r.update(ctx, func(rec *engine.TaskRecord) { rec.Status, rec.Inputs = engine.TaskCancelled, nil })
		return
	}
	if cancelled, _ := r.t.Cancelled(context.WithoutCancel(ctx)); cancelled {
		r.update(ctx, func(rec *engine.TaskRecord) { rec.Status, rec.Inputs = engine.TaskCancelled, nil })
		return
	}
	var result, failure json.RawMessage
	if err == nil {
		if result, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("elicit: task result does not encode")
		}
	}
	if err != nil {
		failure = taskError(err)
	}
	r.update(ctx, func(rec *engine.TaskRecord) {
		rec.Inputs = nil
		if failure != nil {
			rec.Status, rec.Error = engine.TaskFailed, failure
		} else {
			rec.Status, rec.Result = engine.TaskCompleted, result
		}
	})
}

// call runs the handler; a panic fails the task.
func (r *taskRun) call(ctx context.Context, next func(context.Context) (mcp.Result, error)) (res mcp.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.e.log.Error("elicit: a task's tool handler panicked", "stack", string(debug.Stack()))
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
	}()
	return next(ctx)
}

// taskError is the JSON-RPC error of a failed task: a handler's
// *jsonrpc.Error as it is, anything else an internal error that says
// nothing of its cause.
func taskError(err error) json.RawMessage {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	b, _ := json.Marshal(struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{je.Code, je.Message, je.Data})
	return b
}

// watch wakes the task's input waiters on every announcement, and every
// few seconds for those lost, and cancels the handler once a
// cancellation was asked.
func (r *taskRun) watch(ctx context.Context, sub store.Subscription, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(taskPollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-sub.Messages():
			if !ok {
				sub = nil
			}
		case <-tick.C:
		}
		if cancelled, _ := r.t.Cancelled(ctx); cancelled {
			cancel(errTaskCancelled)
			return
		}
		r.signal()
		if sub == nil {
			// The subscription ended: poll only.
			sub = closedSubscription{}
		}
	}
}

// taskPollEvery is how often a task's runner reads the store when no
// announcement comes.
var taskPollEvery = 5 * time.Second

type closedSubscription struct{}

func (closedSubscription) Messages() <-chan store.Message { return nil }
func (closedSubscription) Err() error                     { return nil }
func (closedSubscription) Close() error                   { return nil }

// taskInput is the request flow of an elicitation within a task: it
// lists the input request in the task's record (input_required) and
// waits, at most ttl, for the answer tasks/update writes on any node,
// which it takes once. A URL-mode elicitation is answered on its page
// (whose callback may reach any node), or declined with tasks/update.
func (pa *taskPath) taskInput(ctx context.Context, run *taskRun, q *engine.Ask) (*Response, error) {
	e := pa.e
	key := q.InputKey()
	p := q.Params()
	var page <-chan urlOutcome
	switch q.Mode {
	case engine.ModeForm:
	case engine.ModeURL:
		link, s, err := e.engine.PendURL(ctx, q)
		if err != nil {
			return nil, err
		}
		defer s.End(ctx)
		p.URL, p.ElicitationID = link, q.ID
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := make(chan urlOutcome, 1)
		go func() {
			res, _, err := e.engine.AwaitURL(pctx, q, 0) // a task waits until the TTL
			ch <- urlOutcome{fromEngine(res), err}
		}()
		page = ch
	default:
		return nil, ErrUnsupported
	}
	input, err := json.Marshal(struct {
		Method string               `json:"method"`
		Params *engine.ElicitParams `json:"params"`
	}{"elicitation/create", p})
	if err != nil {
		return nil, err
	}
	err = run.update(ctx, func(rec *engine.TaskRecord) {
		if rec.Inputs == nil {
			rec.Inputs = map[string]json.RawMessage{}
		}
		rec.Inputs[key] = input
		rec.Status = engine.TaskInputRequired
	})
	if err != nil {
		return nil, err
	}
	// answered lists key as answered first, so that no replay writes an
	// answer again, then takes the answer written, if any: used once.
	answered := func() (json.RawMessage, error) {
		err := run.update(ctx, func(rec *engine.TaskRecord) {
			delete(rec.Inputs, key)
			rec.Answered = append(rec.Answered, key)
			if len(rec.Inputs) == 0 {
				rec.Status = engine.TaskWorking
			}
		})
		if err != nil {
			return nil, err
		}
		return run.t.TakeAnswer(ctx, key)
	}
	timeout := time.NewTimer(q.TTL)
	defer timeout.Stop()
	for {
		woken := run.woken()
		if raw, err := run.t.PeekAnswer(ctx, key); err == nil {
			var a taskAnswer
			if json.Unmarshal(raw, &a) != nil {
				return nil, ErrMalformed
			}
			// A URL-mode elicitation accepted in tasks/update is answered
			// on its page: wait for that.
			if page == nil || a.Action != Accept {
				raw, err := answered()
				if err != nil {
					return nil, err
				}
				defer clear(raw)
				if json.Unmarshal(raw, &a) != nil {
					return nil, ErrMalformed
				}
				return &Response{Action: a.Action, Content: a.Content}, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timeout.C:
			run.update(ctx, func(rec *engine.TaskRecord) {
				delete(rec.Inputs, key)
				if len(rec.Inputs) == 0 && rec.Status == engine.TaskInputRequired {
					rec.Status = engine.TaskWorking
				}
			})
			return nil, ErrTimeout
		case o := <-page:
			if o.err != nil {
				return nil, o.err
			}
			if _, err := answered(); err != nil && !errors.Is(err, engine.ErrUnknownTask) {
				return nil, err
			}
			return o.res, nil
		case <-woken:
		}
	}
}

type urlOutcome struct {
	res *Response
	err error
}

// listTaskTools adds execution.taskSupport to the tools of a tools/list
// result that run as tasks (mcp.Tool has no such field in go-sdk v1.8.0).
func (pa *taskPath) listTaskTools(req mcp.Request) func(mcp.Result, error) (mcp.Result, error) {
	e := pa.e
	return func(res mcp.Result, err error) (mcp.Result, error) { return e.task.listedTaskTools(req, res, err) }
}

func (pa *taskPath) listedTaskTools(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
	e := pa.e
	lr, ok := res.(*mcp.ListToolsResult)
	if err != nil || !ok || lr == nil || !e.tasks.enabled() {
		return res, err
	}
	var fields map[string]json.RawMessage
	var tools []map[string]any
	raw, err := json.Marshal(lr)
	if err != nil || json.Unmarshal(raw, &fields) != nil || json.Unmarshal(fields["tools"], &tools) != nil {
		return res, nil
	}
	for _, t := range tools {
		name, _ := t["name"].(string)
		if support, ok := e.tasks.support(name); ok {
			t["execution"] = map[string]any{"taskSupport": string(support)}
		}
	}
	if fields["tools"], err = json.Marshal(tools); err != nil {
		return res, nil
	}
	delete(fields, "_meta")
	if p := req.GetParams(); p != nil && p.GetMeta() != nil {
		if _, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion]; ok {
			fields["resultType"] = json.RawMessage(`"complete"`)
		}
	}
	out := &taskToolList{fields: fields}
	out.Meta = lr.Meta
	return out, nil
}

// taskToolList is a tools/list result whose tools carry execution.
type taskToolList struct {
	mcp.ResultBase
	fields map[string]json.RawMessage
}

func (l *taskToolList) MarshalJSON() ([]byte, error) {
	out := maps.Clone(l.fields)
	if len(l.Meta) > 0 {
		m, err := json.Marshal(l.Meta)
		if err != nil {
			return nil, err
		}
		out["_meta"] = m
	}
	return json.Marshal(out)
}

// taskPath is the tasks extension: the tools that run as tasks, and the
// input a task asks for while it runs (taskInput, the engine.Ask.Task of
// its elicitations).
type taskPath struct{ e *Elicitor }

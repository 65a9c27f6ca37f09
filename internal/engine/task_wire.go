package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
)

// This file is the tasks extension as a client sees it, whichever SDK
// carries it: the tools that run as tasks, the JSON of a task, tasks/get,
// tasks/update and tasks/cancel (Tasks.Serve) and the checks of an update.
// A front-end decodes the request, gives Tasks.Serve the caller's Identity,
// and encodes what it returns.

// TasksExtension is the name of the tasks extension (SEP-2663) in the
// capabilities' extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The JSON-RPC error codes of the extension's refusals.
const (
	// CodeHeaderMismatch: a routing header (Mcp-Name) disagrees with the
	// request's body (SEP-2243).
	CodeHeaderMismatch = -32020
	// CodeMissingCapabilities: the client did not declare what the call
	// needs (SEP-2575).
	CodeMissingCapabilities = -32021
)

// How a tool runs as a task.
const (
	TaskOptional = "optional" // as a task for a client that declared the extension
	TaskRequired = "required" // as a task, and refused (NoTasksError) to another
)

// The defaults of a task: how long it is kept from its creation, and the
// interval between two tasks/get it suggests to its client.
const (
	DefaultTaskTTL   = time.Hour
	TaskPollInterval = time.Second
)

// TaskTools are the tools of a front-end that run as tasks, with their
// support (TaskOptional or TaskRequired). The zero value has none.
type TaskTools struct {
	mu sync.Mutex
	m  map[string]string
}

// Set makes tool run as a task with support.
func (tt *TaskTools) Set(tool, support string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.m == nil {
		tt.m = map[string]string{}
	}
	tt.m[tool] = support
}

// Support returns how tool runs as a task; ok is false when it does not.
func (tt *TaskTools) Support(tool string) (support string, ok bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	support, ok = tt.m[tool]
	return support, ok
}

// Enabled reports whether any tool runs as a task: the front-end then
// serves the extension.
func (tt *TaskTools) Enabled() bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.m) > 0
}

// TaskWire is a task as the client sees it: the CreateTaskResult of a
// tools/call (ResultType "task") and the DetailedTask of tasks/get
// ("complete").
type TaskWire struct {
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

func wireTask(id, resultType string, rec *TaskRecord) *TaskWire {
	ms := func(t int64) string { return time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z") }
	return &TaskWire{
		ResultType: resultType, TaskID: id, Status: rec.Status, StatusMessage: rec.Message,
		CreatedAt: ms(rec.Created), LastUpdatedAt: ms(rec.Updated),
		TTLMs: rec.TTL, PollIntervalMs: rec.Poll,
		InputRequests: rec.Inputs, Result: rec.Result, Error: rec.Error,
	}
}

// TaskAck is the result of tasks/update and tasks/cancel.
type TaskAck struct {
	ResultType string `json:"resultType"`
}

// RPCError is a JSON-RPC error that a front-end sends as it is: Message
// says nothing of an answer.
type RPCError struct {
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *RPCError) Error() string { return e.Message }

// NoTasksError is the refusal of a client that did not declare the
// extension, for a request that needs it.
func NoTasksError() *RPCError {
	data, _ := json.Marshal(map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}},
	})
	return &RPCError{
		Code:    CodeMissingCapabilities,
		Message: "the client did not declare the " + TasksExtension + " extension",
		Data:    data,
	}
}

// DeclaresTasks reports whether client capabilities' extensions (the
// "extensions" object, as the SDK decoded it) declare the tasks
// extension.
func DeclaresTasks[V any](extensions map[string]V) bool {
	_, ok := extensions[TasksExtension]
	return ok
}

// TaskNameMatches reports whether the Mcp-Name header values of a
// tasks/* request over HTTP (2026-07-28) agree with its taskId: one value,
// without surrounding whitespace, possibly written as =?base64?…?=
// (SEP-2243), or none: a request without the header passes (the go-sdk's
// client, v1.8.0, sends none for these methods). A front-end refuses one
// that does not with HTTP 400 and CodeHeaderMismatch.
func TaskNameMatches(values []string, taskID string) bool {
	if len(values) == 0 {
		return true
	}
	if len(values) != 1 {
		return false
	}
	v := strings.TrimSpace(values[0])
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		enc, ok = strings.CutSuffix(enc, "?=")
		b, err := base64.StdEncoding.DecodeString(enc)
		if !ok || err != nil {
			return false
		}
		v = string(b)
	}
	return v == taskID
}

// IsTaskMethod reports whether method is one Tasks.Serve answers.
func IsTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		return true
	}
	return false
}

// Serve answers tasks/get (a *TaskWire), tasks/update and tasks/cancel
// (a *TaskAck) of the caller who, on any node: responses are the
// inputResponses of tasks/update, the raw JSON of each by key. A task
// that is unknown, another caller's or tampered with, an answer to an
// input request answered already (a replay) and an answer that does not
// match the input request it answers are *InvalidParamsError (-32602),
// with nothing written; a store that fails is a *StoreError.
func (ts Tasks) Serve(ctx context.Context, who Identity, method, taskID string, responses map[string]json.RawMessage) (any, error) {
	e := ts.e
	if taskID == "" {
		return nil, &InvalidParamsError{Message: "unknown task", Err: ErrUnknownTask}
	}
	t := e.Task(who, taskID)
	var err error
	switch method {
	case "tasks/get":
		var rec *TaskRecord
		if rec, err = t.View(ctx); err == nil {
			return wireTask(t.ID, "complete", rec), nil
		}
	case "tasks/update":
		err = t.Answer(ctx, responses, checkTaskAnswer(e.cfg.MaxContentSize))
	case "tasks/cancel":
		err = t.Cancel(ctx)
	default:
		return nil, errors.New("engine: Tasks.Serve needs tasks/get, tasks/update or tasks/cancel")
	}
	var ip *InvalidParamsError
	switch {
	case err == nil:
		return &TaskAck{ResultType: "complete"}, nil
	case errors.Is(err, ErrUnknownTask):
		return nil, &InvalidParamsError{Message: "unknown task", Err: ErrUnknownTask}
	case errors.Is(err, ErrTaskAnswered):
		return nil, &InvalidParamsError{Message: "input request already answered", Err: ErrTaskAnswered}
	case errors.As(err, &ip):
		return nil, err
	}
	var se *StoreError
	if errors.As(err, &se) {
		return nil, err
	}
	return nil, &InvalidParamsError{Message: err.Error(), Err: err}
}

// TaskAnswer is an answer to a task's input request, as kept sealed until
// the task's runner takes it: the action, and for an accepted form its
// content, validated against the schema asked.
type TaskAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// checkTaskAnswer returns the check of an input response against the
// input request it answers (Task.Answer's): it returns the answer to
// keep (a TaskAnswer), its content, if any, at most maxContent bytes of
// JSON.
func checkTaskAnswer(maxContent int) func(input, answer json.RawMessage) (json.RawMessage, error) {
	return func(input, answer json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Params struct {
				Mode            string          `json:"mode"`
				RequestedSchema json.RawMessage `json:"requestedSchema"`
			} `json:"params"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, errors.New("elicit: task input request does not decode")
		}
		var a struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(answer, &a); err != nil {
			return nil, &InvalidParamsError{Message: "input response is not an elicitation result"}
		}
		out := TaskAnswer{Action: a.Action}
		switch a.Action {
		case "decline", "cancel":
		case "accept":
			if in.Params.Mode == "url" {
				break // answered on its page
			}
			content, err := ValidateAnswer(in.Params.RequestedSchema, a.Content, maxContent)
			switch {
			case errors.Is(err, ErrTooLarge):
				return nil, &InvalidParamsError{Message: "content larger than the size limit", Err: err}
			case err != nil:
				return nil, &InvalidParamsError{Message: err.Error(), Err: err}
			}
			out.Content = content
		default:
			return nil, &InvalidParamsError{Message: "input response has no valid action"}
		}
		return json.Marshal(out)
	}
}

package main

import (
	"context"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/mcpgo"
	mg "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixtures of the conformance suite's tasks-* scenarios (the tasks
// extension, io.modelcontextprotocol/tasks, SEP-2663; 0.2.0-alpha.12),
// with the names and behaviours the scenarios describe: greet runs
// synchronously; slow_compute, failing_job, protocol_error_job,
// confirm_delete and multi_input run as tasks (elicit.RunAsTask),
// failing_job only as one (a client without the extension gets -32021);
// test_tool_with_task asks with SEP-2322 input requests, then continues
// as a task (elicit.StartTask; mcpgo.StartTask on mcp-go). With
// --sdk mcp-go they are registered on the mcp-go server too, and run as
// tasks there through the mcpgo front-end (Server.RunAsTask).
// confirm_delete and multi_input ask with elicit.Confirm and elicit.Form:
// inside a task those become the task's input requests, answered with
// tasks/update and sealed in the store until the handler takes them.

var (
	multiSchema = lazySchema(`{"type":"object","properties":{
		"name":{"type":"string","description":"A name"},
		"confirm":{"type":"boolean","description":"Confirm"}},
		"required":["name"]}`)
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"whom to greet"`
}

type slowArgs struct {
	Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to work, in seconds"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

type fileArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

func (r *reference) addConformanceTaskTools() {
	s := r.server
	addTool(r, &mcp.Tool{
		Name:        "greet",
		Description: "Tasks extension: a synchronous tool that greets",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, any, error) {
		return text("Hello, %s!", in.Name), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "slow_compute",
		Description: "Tasks extension: works for the given seconds, then answers; a task when the client supports tasks",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
		return text("Computed %s after %gs.", in.Label, in.Seconds), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "failing_job",
		Description: "Tasks extension: a task (required) that ends with a tool error after a second",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
		res := text("The job failed.")
		res.IsError = true
		return res, nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "protocol_error_job",
		Description: "Tasks extension: a task whose handler panics, which fails the task",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		panic("protocol_error_job: a failure on purpose")
	})
	addTool(r, &mcp.Tool{
		Name:        "confirm_delete",
		Description: "Tasks extension: asks to confirm a deletion (an input request of the task), then answers",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in fileArgs) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Delete "+in.Filename+"?")
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return text("Kept %s.", in.Filename), nil, nil
		}
		return text("Deleted %s.", in.Filename), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "multi_input",
		Description: "Tasks extension: asks two questions at once (two input requests of the task)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		var wg sync.WaitGroup
		names := make([]string, 2)
		errs := make([]error, 2)
		for i, key := range []string{"first", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := elicit.Form[map[string]any](ctx, "Your "+key+" name?",
					elicit.WithSchema(multiSchema()), inputKey(key))
				if err == nil && res.Action == elicit.Accept {
					names[i], _ = res.Content["name"].(string)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, nil, err
			}
		}
		return text("Got %s and %s.", names[0], names[1]), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_tool_with_task",
		Description: "Tasks extension with SEP-2322: asks for the user's name (input request user_name), then continues as a task that greets",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		greeting, err := greetByName(ctx)
		if err != nil {
			return nil, nil, err
		}
		out, err := elicit.StartTask(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			return text("%s", greeting), nil
		})
		return out, nil, err
	})
	if r.mg != nil {
		r.mg.AddTool(mg.NewTool("test_tool_with_task", mg.WithDescription("Tasks extension with SEP-2322: asks for the user's name (input request user_name), then continues as a task that greets")),
			func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
				greeting, err := greetByName(ctx)
				if err != nil {
					return nil, err
				}
				return mcpgo.StartTask(ctx, func(ctx context.Context) (*mg.CallToolResult, error) {
					return mg.NewToolResultText(greeting), nil
				})
			})
	}
	for tool, support := range map[string]elicit.TaskSupport{
		"slow_compute":       elicit.TaskOptional,
		"failing_job":        elicit.TaskRequired,
		"protocol_error_job": elicit.TaskOptional,
		"confirm_delete":     elicit.TaskOptional,
		"multi_input":        elicit.TaskOptional,
	} {
		if err := r.ev.RunAsTask(s, tool, support); err != nil {
			panic(err)
		}
		if r.front != nil {
			if err := r.front.RunAsTask(tool, support); err != nil {
				panic(err)
			}
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeEnv names the variable that, set to a file path, adds the tool
// fault_probe for the fault suite (integration/faults): it asks the user
// (a form, or URL mode), and when the answer is accept it appends its
// argument "run" and a newline to that file, once per run of the tool
// after an answer. The suite counts the lines of every node to find runs
// that happened twice or never. It is not a feature: leave it unset.
const probeEnv = "ELICITVAULT_FAULT_PROBE_LOG"

type probeArgs struct {
	Run  string `json:"run" jsonschema:"an identifier of the attempt, written to the log once the tool ran"`
	Mode string `json:"mode,omitempty" jsonschema:"form (default) or url"`
}

var probeMu sync.Mutex

func (r *reference) addProbe(path string) {
	addTool(r, &mcp.Tool{
		Name:        "fault_probe",
		Description: "A test tool of the fault suite: asks, then logs that it ran.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in probeArgs) (*mcp.CallToolResult, any, error) {
		var ok bool
		var err error
		if in.Mode == "url" {
			var a elicit.Action
			a, err = elicit.URL(ctx, "Open the probe's page")
			ok = a == elicit.Accept
		} else {
			ok, err = elicit.Confirm(ctx, "Probe?")
		}
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return text("declined"), nil, nil
		}
		probeMu.Lock()
		defer probeMu.Unlock()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("probe log: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(in.Run + "\n"); err != nil {
			return nil, nil, fmt.Errorf("probe log: %w", err)
		}
		return text("ran %s", in.Run), nil, nil
	})
}

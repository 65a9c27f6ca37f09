//lint:file-ignore SA1019 the suite's SEP-2322 fixtures ask for sampling and roots, and log, which 2026-07-28 deprecates (SEP-2577) but still carries

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/elicitlink"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixtures of the MCP conformance suite (@modelcontextprotocol/conformance
// 0.1.16 and 0.2.0-alpha.12, run by scripts/conformance): the tools and the
// prompt its elicitation, SEP-2322 (input-required-result-*) and
// server-stateless scenarios call, with the names, messages, schemas and
// input request keys the scenarios describe. They are not part of the
// demo: serve lists them only with --conformance.
//
// A fixture never sends a request of a capability the client did not
// declare (sampling, roots, elicitation): on 2025-11-25 the go-sdk would
// send it as a request that such a client answers -32601, on 2026-07-28 as
// an input request the client cannot answer. It returns instead the
// JSON-RPC error -32021 naming what is missing (SEP-2575), as
// test_missing_capability does.
//
// Every elicitation is asked with the elicit package (Form, Confirm), so
// that the scenarios test the library's flow: blocking elicitation/create
// on 2025-11-25, input requests and a sealed requestState on 2026-07-28.
// Sampling and roots/list input requests, and input requests of a prompt,
// are outside elicit (an elicitation library, for tool calls): those
// fixtures build the go-sdk's InputRequests themselves.

// The conformance suite's elicitation tools (server scenarios
// tools-call-elicitation, elicitation-sep1034-defaults and
// elicitation-sep1330-enums), with the schemas the scenarios describe and
// check.

var (
	conformanceSchema = lazySchema(`{"type":"object","properties":{
		"username":{"type":"string","description":"User's response"},
		"email":{"type":"string","description":"User's email address"}},
		"required":["username","email"]}`)

	sep1034Schema = lazySchema(`{"type":"object","properties":{
		"name":{"type":"string","description":"User name","default":"John Doe"},
		"age":{"type":"integer","description":"User age","default":30},
		"score":{"type":"number","description":"User score","default":95.5},
		"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","description":"Verification status","default":true}},
		"required":[]}`)

	sep1330Schema = lazySchema(`{"type":"object","properties":{
		"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
			{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],
			"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,
			"items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,
			"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},
		"required":[]}`)

	nameSchema  = lazySchema(nameSchemaJSON)
	colorSchema = lazySchema(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)
	okSchema    = lazySchema(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
)

type conformanceArgs struct {
	Message string `json:"message" jsonschema:"The message to show the user"`
}

type noArgs struct{}

func (r *reference) addConformanceTools() {
	s := r.server
	addTool(r, &mcp.Tool{
		Name:        "test_elicitation",
		Description: "Tests server-initiated elicitation (user input request)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in conformanceArgs) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, in.Message, conformanceSchema(), "User response")
	})
	addTool(r, &mcp.Tool{
		Name:        "test_elicitation_sep1034_defaults",
		Description: "Tests elicitation with default values per SEP-1034",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, "Please review and update the form fields with defaults", sep1034Schema(), "Elicitation completed")
	})
	addTool(r, &mcp.Tool{
		Name:        "test_elicitation_sep1330_enums",
		Description: "Tests elicitation with enum schema improvements per SEP-1330",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, "Please select options from the enum fields", sep1330Schema(), "Elicitation completed")
	})

	// SEP-2322 (input-required-result-*), elicitation with elicit.
	addTool(r, &mcp.Tool{
		Name:        "test_input_required_result_elicitation",
		Description: "SEP-2322: asks for the user's name (input request user_name), then greets",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		greeting, err := greetByName(ctx)
		if err != nil {
			return nil, nil, err
		}
		return text("%s", greeting), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "test_input_required_result_request_state",
		Description: "SEP-2322: asks for a confirmation; the state saved before it comes back, sealed in the requestState",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		// What the first run saves, the run that has the answer loads: it
		// travelled in the requestState, sealed and bound to this call.
		// On 2025-11-25 the handler runs once and the state is its own.
		var saved string
		from := "from the requestState"
		if ok, err := elicit.LoadState(ctx, &saved); err != nil {
			return nil, nil, err
		} else if !ok {
			saved, from = "state-ok", "from this run"
			if err := elicit.SaveState(ctx, saved); err != nil {
				return nil, nil, err
			}
		}
		res, err := elicit.Form[map[string]any](ctx, "Please confirm", elicit.WithSchema(okSchema()), inputKey("confirm"))
		if err != nil {
			return nil, nil, err
		}
		return text("%s (%s): action=%s, ok=%v", saved, from, res.Action, res.Content["ok"]), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "test_input_required_result_multi_round",
		Description: "SEP-2322: two rounds of input requests (step1, step2), each with a new requestState",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		name, err := elicit.Form[map[string]any](ctx, "Step 1: What is your name?", elicit.WithSchema(nameSchema()), inputKey("step1"))
		if err != nil {
			return nil, nil, err
		}
		color, err := elicit.Form[map[string]any](ctx, "Step 2: What is your favorite color?", elicit.WithSchema(colorSchema()), inputKey("step2"))
		if err != nil {
			return nil, nil, err
		}
		return text("name=%v, color=%v", name.Content["name"], color.Content["color"]), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "test_input_required_result_tampered_state",
		Description: "SEP-2322: asks for a confirmation; a tampered requestState is the JSON-RPC error -32602",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		res, err := elicit.Form[map[string]any](ctx, "Please confirm", elicit.WithSchema(okSchema()), inputKey("confirm"))
		if err != nil {
			return nil, nil, err
		}
		return text("action=%s, ok=%v", res.Action, res.Content["ok"]), nil, nil
	})
	addTool(r, &mcp.Tool{
		Name:        "test_streaming_elicitation",
		Description: "Stateless MCP: an elicitation, which on 2026-07-28 is an input-required result, never a request on the response stream",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, "What is your name?", nameSchema(), "User response")
	})

	// SEP-2322, sampling and roots/list: the go-sdk's input requests.
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_input_required_result_sampling",
		Description: "SEP-2322: asks the client's model a question (input request capital_question)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if err := requireCaps(req.ClientCapabilities(), need{sampling: true}); err != nil {
			return nil, nil, err
		}
		if res, ok := req.Params.InputResponses["capital_question"].(*mcp.CreateMessageWithToolsResult); ok {
			return text("The model answered: %s", samplingText(res)), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": capitalQuestion()}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_input_required_result_list_roots",
		Description: "SEP-2322: asks for the client's roots (input request client_roots)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if err := requireCaps(req.ClientCapabilities(), need{roots: true}); err != nil {
			return nil, nil, err
		}
		if res, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
			return text("Roots: %s", rootURIs(res)), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_input_required_result_multiple_inputs",
		Description: "SEP-2322: an elicitation, a sampling request and roots/list in one round, with a sealed requestState",
	}, r.multipleInputs)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_input_required_result_capabilities",
		Description: "SEP-2322: asks only for what the client declared it can answer (elicitation, sampling)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) > 0 {
			return text("Thank you."), nil, nil
		}
		caps := declared(req.ClientCapabilities())
		irs := mcp.InputRequestMap{}
		if caps.Sampling != nil {
			irs["capital_question"] = capitalQuestion()
		}
		if caps.Elicitation != nil {
			irs["user_name"] = &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: json.RawMessage(nameSchemaJSON)}
		}
		if len(irs) == 0 {
			return text("This client can answer no input request."), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: irs}, nil, nil
	})

	// server-stateless.
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_missing_capability",
		Description: "Stateless MCP: needs sampling, and refuses a client that did not declare it (-32021)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if err := requireCaps(req.ClientCapabilities(), need{sampling: true}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": capitalQuestion()}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_logging_tool",
		Description: "Logs a message at info level: sent only to a client that asked for that level",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "elicitvault", Data: "test_logging_tool ran"})
		return text("Logged."), nil, nil
	})

	// input-required-result-non-tool-request: a prompt that needs input.
	prompt := &mcp.Prompt{
		Name:        "test_input_required_result_prompt",
		Description: "SEP-2322: a prompt that first asks the user for its context (input request user_context)",
	}
	s.AddPrompt(prompt, promptWithInput)

	// The list-changed notifications of subscriptions/listen: each
	// trigger registers its tool or the prompt again, unchanged, which
	// notifies the listeners.
	var trigger func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error)
	triggerTool := &mcp.Tool{Name: "test_trigger_tool_change", Description: "Stateless MCP: notifies that the tool list changed"}
	trigger = func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, triggerTool, trigger)
		return text("The tool list changed."), nil, nil
	}
	mcp.AddTool(s, triggerTool, trigger)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_trigger_prompt_change",
		Description: "Stateless MCP: notifies that the prompt list changed",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		s.AddPrompt(prompt, promptWithInput)
		return text("The prompt list changed."), nil, nil
	})
}

const nameSchemaJSON = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

func capitalQuestion() *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is the capital of France?"}}},
		MaxTokens: 100,
	}
}

func samplingText(res *mcp.CreateMessageWithToolsResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func rootURIs(res *mcp.ListRootsResult) string {
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r != nil {
			uris = append(uris, r.URI)
		}
	}
	return strings.Join(uris, ", ")
}

// declared returns the capabilities the client declared, as the request's
// ClientCapabilities gives them (on 2026-07-28 from its _meta, before from
// initialize): none when it gives nil.
func declared(caps *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	if caps == nil {
		return &mcp.ClientCapabilities{}
	}
	return caps
}

// need is what of the client a fixture asks for.
type need struct{ sampling, roots, elicitation bool }

// requireCaps returns nil when the client declared every capability in n,
// else the JSON-RPC error -32021 (SEP-2575) whose data names the ones it
// did not declare.
func requireCaps(caps *mcp.ClientCapabilities, n need) error {
	caps = declared(caps)
	missing := map[string]struct{}{}
	if n.sampling && caps.Sampling == nil {
		missing["sampling"] = struct{}{}
	}
	if n.roots && caps.RootsV2 == nil {
		missing["roots"] = struct{}{}
	}
	if n.elicitation && caps.Elicitation == nil {
		missing["elicitation"] = struct{}{}
	}
	if len(missing) == 0 {
		return nil
	}
	data, err := json.Marshal(map[string]any{"requiredCapabilities": missing})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "the client did not declare the capabilities this needs: " + strings.Join(slices.Sorted(maps.Keys(missing)), ", "),
		Data:    data,
	}
}

// multipleInputs asks for three things in one round. Its requestState is
// a request-state token of the server's token service (sealed, bound to
// the tool and its arguments, one use), in the JWE format: the
// Elicitor leaves a requestState that is not one of its own to the
// handler.
func (r *reference) multipleInputs(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if err := requireCaps(req.ClientCapabilities(), need{sampling: true, roots: true, elicitation: true}); err != nil {
		return nil, nil, err
	}
	p := req.Params
	args, err := token.HashArgs(p.Arguments)
	if err != nil {
		return nil, nil, err
	}
	if p.RequestState != "" {
		if _, err := r.fixtureState.Consume(ctx, p.RequestState, token.Expect{Kind: token.RequestState, SessionID: "-", Tool: p.Name, ArgsHash: args}); err != nil {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: requestState is invalid, expired or already used"}
		}
		name, _ := p.InputResponses["user_name"].(*mcp.ElicitResult)
		greeting, _ := p.InputResponses["greeting"].(*mcp.CreateMessageWithToolsResult)
		roots, _ := p.InputResponses["client_roots"].(*mcp.ListRootsResult)
		if name != nil && greeting != nil && roots != nil {
			return text("name=%v, greeting=%q, roots=%s", name.Content["name"], samplingText(greeting), rootURIs(roots)), nil, nil
		}
	}
	state, err := r.fixtureState.Issue(&token.Claims{
		Kind: token.RequestState, SessionID: "-", ElicitationID: "multiple-inputs", Tool: p.Name, ArgsHash: args,
	}, min(r.ttl, token.MaxTTL), token.JWE)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{
			"user_name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: json.RawMessage(nameSchemaJSON)},
			"greeting": &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a greeting"}}},
				MaxTokens: 50,
			},
			"client_roots": &mcp.ListRootsParams{},
		},
		RequestState: state,
	}, nil, nil
}

// promptWithInput is test_input_required_result_prompt: the first call
// asks for the prompt's context, the second builds the prompt with it.
func promptWithInput(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if err := requireCaps(req.ClientCapabilities(), need{elicitation: true}); err != nil {
		return nil, err
	}
	if res, ok := req.Params.InputResponses["user_context"].(*mcp.ElicitResult); ok && res.Action == string(elicit.Accept) {
		return &mcp.GetPromptResult{
			Description: "A prompt with the user's context",
			Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{
				Text: fmt.Sprintf("Answer with this context in mind: %v", res.Content["context"]),
			}}},
		}, nil
	}
	return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
		Message:         "What context should the prompt use?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
	}}}, nil
}

// greetByName asks for the user's name with the input key user_name
// (SEP-2322) and returns the greeting the suite expects.
func greetByName(ctx context.Context) (string, error) {
	res, err := elicit.Form[struct {
		Name string `json:"name"`
	}](ctx, "What is your name?", elicit.WithSchema(nameSchema()), inputKey("user_name"))
	if err != nil {
		return "", err
	}
	if res.Action != elicit.Accept {
		return fmt.Sprintf("No name given (%s).", res.Action), nil
	}
	return fmt.Sprintf("Hello, %s!", res.Content.Name), nil
}

// conformanceForm asks with schema and reports the validated answer the
// way the suite's reference server does.
func conformanceForm(ctx context.Context, message string, schema *elicit.Schema, label string) (*mcp.CallToolResult, any, error) {
	res, err := elicit.Form[map[string]any](ctx, message, elicit.WithSchema(schema))
	if err != nil {
		return nil, nil, err
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, nil, err
	}
	return text("%s: action=%s, content=%s", label, res.Action, b), nil, nil
}

// inputKey sets the key of an elicitation's input request on 2026-07-28:
// the scenarios expect given keys, which elicit derives from a random ID
// otherwise.
func inputKey(key string) elicit.Option { return elicitlink.InputKey(key).(elicit.Option) }

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/elicitvault/elicitvault/internal/token"
	mg "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
)

// The conformance fixtures that are not elicitations (sampling, roots/list,
// several input requests of different kinds, a prompt, logging), written
// for mcp-go: the go-sdk ones (serve_conformance.go) build the go-sdk's
// input requests. The fixtures asked with elicit are registered on both
// SDKs by addTool.
//
// mcp-go sends a tool handler's error as -32603, so a fixture cannot
// answer -32021 (a missing client capability) on mcp-go: where the go-sdk
// fixture answers it, this one answers a tool error naming the
// capability, and test_missing_capability, which the suite calls for
// -32021, is answered in front of mcp-go (mgRequireSampling).

func (r *reference) addMCPGoConformance() {
	m := r.mg
	text := func(format string, args ...any) *mg.CallToolResult {
		return mg.NewToolResultText(fmt.Sprintf(format, args...))
	}
	m.AddTool(mg.NewTool("test_input_required_result_sampling",
		mg.WithDescription("SEP-2322: asks the client's model a question (input request capital_question)")),
		func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
			if missing := mgMissing(ctx, need{sampling: true}); missing != nil {
				return missing, nil
			}
			if res := mgserver.SamplingResponse(req.Params.InputResponses, "capital_question"); res != nil {
				return text("The model answered: %s", mgSamplingText(res)), nil
			}
			return mgserver.NewInputRequestBuilder("").Sample("capital_question", mgCapitalQuestion()).ToolResult(), nil
		})
	m.AddTool(mg.NewTool("test_input_required_result_list_roots",
		mg.WithDescription("SEP-2322: asks for the client's roots (input request client_roots)")),
		func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
			if missing := mgMissing(ctx, need{roots: true}); missing != nil {
				return missing, nil
			}
			if res := mgserver.RootsResponse(req.Params.InputResponses, "client_roots"); res != nil {
				return text("Roots: %s", mgRootURIs(res)), nil
			}
			return mgserver.NewInputRequestBuilder("").Roots("client_roots").ToolResult(), nil
		})
	m.AddTool(mg.NewTool("test_input_required_result_multiple_inputs",
		mg.WithDescription("SEP-2322: an elicitation, a sampling request and roots/list in one round, with a sealed requestState")),
		r.mgMultipleInputs)
	m.AddTool(mg.NewTool("test_input_required_result_capabilities",
		mg.WithDescription("SEP-2322: asks only for what the client declared it can answer (elicitation, sampling)")),
		func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return text("Thank you."), nil
			}
			caps := mgCaps(ctx)
			b := mgserver.NewInputRequestBuilder("")
			n := 0
			if caps.Sampling != nil {
				b.Sample("capital_question", mgCapitalQuestion())
				n++
			}
			if caps.Elicitation != nil {
				b.Elicit("user_name", mg.ElicitationParams{Message: "What is your name?", RequestedSchema: json.RawMessage(nameSchemaJSON)})
				n++
			}
			if n == 0 {
				return text("This client can answer no input request."), nil
			}
			return b.ToolResult(), nil
		})
	m.AddTool(mg.NewTool("test_missing_capability",
		mg.WithDescription("Stateless MCP: needs sampling, and refuses a client that did not declare it")),
		func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
			if missing := mgMissing(ctx, need{sampling: true}); missing != nil {
				return missing, nil
			}
			return mgserver.NewInputRequestBuilder("").Sample("capital_question", mgCapitalQuestion()).ToolResult(), nil
		})
	m.AddTool(mg.NewTool("test_logging_tool",
		mg.WithDescription("Logs a message at info level: sent only to a client that asked for that level")),
		func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
			m.SendLogMessageToClient(ctx, mg.NewLoggingMessageNotification(mg.LoggingLevelInfo, "elicitvault", "test_logging_tool ran"))
			return text("Logged."), nil
		})
	m.AddPrompt(mg.NewPrompt("test_input_required_result_prompt",
		mg.WithPromptDescription("SEP-2322: a prompt that first asks the user for its context (input request user_context)")),
		func(ctx context.Context, req mg.GetPromptRequest) (*mg.GetPromptResult, error) {
			if res := mgserver.ElicitationResponse(req.Params.InputResponses, "user_context"); res != nil && res.Action == mg.ElicitationResponseActionAccept {
				content, _ := res.Content.(map[string]any)
				return &mg.GetPromptResult{
					Description: "A prompt with the user's context",
					Messages: []mg.PromptMessage{mg.NewPromptMessage(mg.RoleUser,
						mg.NewTextContent(fmt.Sprintf("Answer with this context in mind: %v", content["context"])))},
				}, nil
			}
			return mgserver.NewInputRequestBuilder("").Elicit("user_context", mg.ElicitationParams{
				Message:         "What context should the prompt use?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
			}).PromptResult(), nil
		})
}

// mgCaps are the capabilities the client declared for this request.
func mgCaps(ctx context.Context) *mg.ClientCapabilities {
	if pi := mgserver.RequestProtocolInfoFromContext(ctx); pi != nil && pi.Modern {
		if pi.ClientCapabilities != nil {
			return pi.ClientCapabilities
		}
		return &mg.ClientCapabilities{}
	}
	if ci, ok := mgserver.ClientSessionFromContext(ctx).(mgserver.SessionWithClientInfo); ok {
		c := ci.GetClientCapabilities()
		return &c
	}
	return &mg.ClientCapabilities{}
}

// mgMissing is the tool error of a request that lacks a capability in n,
// or nil.
func mgMissing(ctx context.Context, n need) *mg.CallToolResult {
	caps := mgCaps(ctx)
	var missing []string
	if n.elicitation && caps.Elicitation == nil {
		missing = append(missing, "elicitation")
	}
	if n.roots && caps.Roots == nil {
		missing = append(missing, "roots")
	}
	if n.sampling && caps.Sampling == nil {
		missing = append(missing, "sampling")
	}
	if len(missing) == 0 {
		return nil
	}
	return mg.NewToolResultError("the client did not declare the capabilities this needs: " + strings.Join(missing, ", "))
}

func mgCapitalQuestion() mg.CreateMessageParams {
	return mg.CreateMessageParams{
		Messages:  []mg.SamplingMessage{{Role: mg.RoleUser, Content: mg.NewTextContent("What is the capital of France?")}},
		MaxTokens: 100,
	}
}

func mgSamplingText(res *mg.CreateMessageResult) string {
	switch c := res.Content.(type) {
	case mg.TextContent:
		return c.Text
	case map[string]any:
		s, _ := c["text"].(string)
		return s
	}
	return ""
}

func mgRootURIs(res *mg.ListRootsResult) string {
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return strings.Join(uris, ", ")
}

// mgMultipleInputs is multipleInputs on mcp-go: its requestState is the
// fixture's own token (not the Elicitor's, which leaves it to the handler).
func (r *reference) mgMultipleInputs(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
	if missing := mgMissing(ctx, need{sampling: true, roots: true, elicitation: true}); missing != nil {
		return missing, nil
	}
	p := req.Params
	args, err := token.HashArgs(p.RawArguments)
	if err != nil {
		return nil, err
	}
	if p.RequestState != "" {
		if _, err := r.fixtureState.Consume(ctx, p.RequestState, token.Expect{Kind: token.RequestState, SessionID: "-", Tool: p.Name, ArgsHash: args}); err != nil {
			return mg.NewToolResultError("invalid params: requestState is invalid, expired or already used"), nil
		}
		name := mgserver.ElicitationResponse(p.InputResponses, "user_name")
		greeting := mgserver.SamplingResponse(p.InputResponses, "greeting")
		roots := mgserver.RootsResponse(p.InputResponses, "client_roots")
		if name != nil && greeting != nil && roots != nil {
			content, _ := name.Content.(map[string]any)
			return mg.NewToolResultText(fmt.Sprintf("name=%v, greeting=%q, roots=%s", content["name"], mgSamplingText(greeting), mgRootURIs(roots))), nil
		}
	}
	state, err := r.fixtureState.Issue(&token.Claims{
		Kind: token.RequestState, SessionID: "-", ElicitationID: "multiple-inputs", Tool: p.Name, ArgsHash: args,
	}, min(r.ttl, token.MaxTTL), token.JWE)
	if err != nil {
		return nil, err
	}
	return mgserver.NewInputRequestBuilder(state).
		Elicit("user_name", mg.ElicitationParams{Message: "What is your name?", RequestedSchema: json.RawMessage(nameSchemaJSON)}).
		Sample("greeting", mg.CreateMessageParams{
			Messages:  []mg.SamplingMessage{{Role: mg.RoleUser, Content: mg.NewTextContent("Generate a greeting")}},
			MaxTokens: 50,
		}).
		Roots("client_roots").
		ToolResult(), nil
}

// mgRequireSampling answers test_missing_capability of a 2026-07-28
// client that did not declare sampling with -32021 (HTTP 400) before
// mcp-go reads the call: mcp-go sends a tool handler's error as -32603.
func mgRequireSampling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Name") != "test_missing_capability" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					Protocol string `json:"io.modelcontextprotocol/protocolVersion"`
					Caps     *struct {
						Sampling json.RawMessage `json:"sampling"`
					} `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err != nil || json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || msg.Params.Name != "test_missing_capability" ||
			!mg.IsModernProtocol(msg.Params.Meta.Protocol) || msg.Params.Meta.Caps == nil || msg.Params.Meta.Caps.Sampling != nil {
			next.ServeHTTP(w, r)
			return
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
			"code":    mg.MISSING_REQUIRED_CLIENT_CAPABILITY,
			"message": "the client did not declare the capabilities this needs: sampling",
			"data":    map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}},
		}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(out)
	})
}

package elicit_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exampleServer runs a server with an Elicitor configured by cfg, a tool
// that asks for a profile, and a client that answers with content, and
// calls the tool once at protocol version.
func exampleServer(cfg *elicit.Config, content map[string]any, version string) {
	ctx := context.Background()
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(nil)
	defer st.Close()
	ev, err := elicit.New(keys, st, cfg)
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	ev.Install(server)

	type contact struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add_contact"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := elicit.Form[contact](ctx, "Who should be added to TICKET-4711?")
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res.Action)}}}, nil, nil
	})

	ct, stt := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, stt, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_contact"}); err != nil {
		log.Fatal(err)
	}
}

// redact returns content with every value but those of the keep fields
// replaced, in a stable order, for logging.
func redact(content map[string]any, keep ...string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(content)) {
		v := "[redacted]"
		if slices.Contains(keep, k) {
			v = fmt.Sprint(content[k])
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// An audit trail: who asked what, how it was answered, and why it failed,
// without the answer itself. (The go-sdk client refuses to send the second
// answer, which lacks a required field; a client that sent it anyway would
// see the server refuse it in the result flow, with the path /email.) The
// elicitation ID, being random, is left out of the output here.
func ExampleHooks_audit() {
	audit := elicit.Hooks{
		AfterRequest: func(_ context.Context, r *elicit.Request, raw *elicit.Response, err error) {
			if err != nil {
				fmt.Printf("audit: %s asked (%s, %d fields): %v\n", r.Call.Tool, r.Mode, len(r.Schema.Fields()), err)
				return
			}
			fmt.Printf("audit: %s asked (%s, %d fields): %s\n", r.Call.Tool, r.Mode, len(r.Schema.Fields()), raw.Action)
		},
		AfterResult: func(_ context.Context, r *elicit.Request, res *elicit.Response, err error) {
			if err != nil {
				fmt.Printf("audit: %s answer refused: %v\n", r.Call.Tool, err)
				return
			}
			fmt.Printf("audit: %s answer delivered: %s with %d fields\n", r.Call.Tool, res.Action, len(res.Content))
		},
	}
	cfg := &elicit.Config{Hooks: []elicit.Hooks{audit}}
	exampleServer(cfg, map[string]any{"name": "Ann", "email": "ann@example.com"}, "2025-11-25")
	exampleServer(cfg, map[string]any{"name": "Ann"}, "2025-11-25")
	// Output:
	// audit: add_contact asked (form, 2 fields): accept
	// audit: add_contact answer delivered: accept with 2 fields
	// audit: add_contact asked (form, 2 fields): elicit: the client answered with error code -32602
}

// Redaction: the message is scrubbed before it is sent, and the answer is
// logged with everything but the fields known to be harmless masked. An
// Around hook sees both the raw answer and the validated one.
func ExampleHooks_redact() {
	redaction := elicit.Hooks{
		BeforeRequest: func(_ context.Context, r *elicit.Request) error {
			// Never let an internal ticket reference reach the client.
			r.Message = strings.ReplaceAll(r.Message, "TICKET-4711", "your request")
			fmt.Println("sending:", r.Message)
			return nil
		},
		AroundResult: func(ctx context.Context, r *elicit.Request, raw *elicit.Response, next elicit.ResultFunc) (*elicit.Response, error) {
			res, err := next(ctx, r, raw)
			if err == nil && res.Action == elicit.Accept {
				fmt.Println("answer:", redact(res.Content, "name"))
			}
			return res, err
		},
	}
	cfg := &elicit.Config{Hooks: []elicit.Hooks{redaction}}
	exampleServer(cfg, map[string]any{"name": "Ann", "email": "ann@example.com"}, "2025-11-25")
	// Output:
	// sending: Who should be added to your request?
	// answer: email=[redacted] name=Ann
}

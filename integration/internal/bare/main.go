// Command bare is the baseline of the end-to-end benchmark (TestE2EBench):
// an MCP server on the go-sdk alone, without elicitvault, with the same
// delete_contacts tool as `elicitvault serve` and the same routing as
// elicit.Handler. Before 2026-07-28 the tool asks with the go-sdk's
// ServerSession.Elicit on a stateful session; on 2026-07-28 it returns an
// input-required result with a plain requestState and reads the answer
// from the retry's inputResponses. Nothing is sealed, stored or checked
// beyond what the go-sdk does: it is what a server pays without
// elicitvault, not something to deploy.
//
//	bare --addr 127.0.0.1:0
//
// With ELICITVAULT_BARE_RUNTIME_TRACE set to a file path it writes a Go
// runtime trace of its first 10 seconds there, to compare with serve's
// (ELICITVAULT_RUNTIME_TRACE).
//
// It prints "bare: MCP at http://ADDR/mcp" on stderr once it listens.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime/trace"
	"time"

	"github.com/elicitvault/elicitvault/integration/internal/bareserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputRequests is the first protocol version whose tools return input
// requests instead of sending requests to the client.
const inputRequests = "2026-07-28"

// confirmSchema is the schema elicit.Confirm asks with.
const confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","default":false}},"required":["confirm"]}`

type deleteArgs struct {
	Count int `json:"count,omitempty"`
}

func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

func confirmed(r *mcp.ElicitResult) bool {
	if r == nil || r.Action != "accept" {
		return false
	}
	ok, _ := r.Content["confirm"].(bool)
	return ok
}

func params(n int) (*mcp.ElicitParams, error) {
	var schema any
	if err := json.Unmarshal([]byte(confirmSchema), &schema); err != nil {
		return nil, err
	}
	return &mcp.ElicitParams{
		Message:         fmt.Sprintf("Delete %d contacts? This cannot be undone.", n),
		RequestedSchema: schema,
	}, nil
}

func count(in deleteArgs) int {
	if in.Count <= 0 {
		return 47
	}
	return in.Count
}

// blocking is delete_contacts before 2026-07-28.
func blocking(ctx context.Context, req *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, any, error) {
	n := count(in)
	p, err := params(n)
	if err != nil {
		return nil, nil, err
	}
	res, err := req.Session.Elicit(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if !confirmed(res) {
		return text("Nothing was deleted."), nil, nil
	}
	return text("Deleted %d contacts.", n), nil, nil
}

// inputRequired is delete_contacts on 2026-07-28.
func inputRequired(_ context.Context, req *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, any, error) {
	n := count(in)
	if r, ok := req.Params.InputResponses["confirm"]; ok && req.Params.RequestState == "bare" {
		er, _ := r.(*mcp.ElicitResult)
		if !confirmed(er) {
			return text("Nothing was deleted."), nil, nil
		}
		return text("Deleted %d contacts.", n), nil, nil
	}
	p, err := params(n)
	if err != nil {
		return nil, nil, err
	}
	// The go-sdk exports no constructor of an input-required result: it is
	// decoded from its wire form, as elicit does.
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"resultType":"input_required"}`), &res); err != nil {
		return nil, nil, err
	}
	res.InputRequests = mcp.InputRequestMap{"confirm": p}
	res.RequestState = "bare"
	return &res, nil, nil
}

func server(tool mcp.ToolHandlerFor[deleteArgs, any]) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "delete_contacts", Description: "Deletes contacts after the user confirms."}, tool)
	return s
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	log.SetFlags(0)
	old, mrtr := server(blocking), server(inputRequired)
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return old },
		&mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mrtr },
		&mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= inputRequests {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	if path := os.Getenv("ELICITVAULT_BARE_RUNTIME_TRACE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		if err := trace.Start(f); err != nil {
			log.Fatal(err)
		}
		time.AfterFunc(10*time.Second, func() { trace.Stop(); f.Close() })
	}
	bareserve.Serve("bare", *addr, mux)
}

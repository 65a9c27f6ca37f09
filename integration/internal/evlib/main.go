// Command evlib is the bare server's delete_contacts on elicitvault's
// library alone: the go-sdk, elicit (elicit.Confirm, Elicitor.Handler)
// and the memory store, without what `elicitvault serve` links besides
// (the mcp-go front-end, OpenTelemetry, the Redis and PostgreSQL drivers,
// the terminal client). TestE2EBench measures it in serve's place with
// ELICITVAULT_E2EBENCH_EV=lib, to tell what elicitvault costs a go-sdk
// server from what serve's binary costs.
//
//	MCP_ELICITATION_SECRET=... evlib --addr 127.0.0.1:0
//
// It prints "evlib: MCP at http://ADDR/mcp" on stderr once it listens.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/integration/internal/bareserve"
	"github.com/elicitvault/elicitvault/integration/internal/evmemory"
)

type deleteArgs struct {
	Count int `json:"count,omitempty"`
}

func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// deleteContacts is serve's delete_contacts without its fallback.
func deleteContacts(ctx context.Context, _ *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, any, error) {
	n := in.Count
	if n <= 0 {
		n = 47
	}
	ok, err := elicit.Confirm(ctx, fmt.Sprintf("Delete %d contacts? This cannot be undone.", n))
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return text("Nothing was deleted."), nil, nil
	}
	return text("Deleted %d contacts.", n), nil, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	log.SetFlags(0)
	ev := evmemory.Elicitor("evlib")
	s := mcp.NewServer(&mcp.Implementation{Name: "evlib", Version: "1"}, nil)
	ev.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "delete_contacts", Description: "Deletes contacts after the user confirms."}, deleteContacts)
	// Every client of the benchmark comes from 127.0.0.1, as with serve's
	// --max-sessions-per-client.
	bareserve.Serve("evlib", *addr, ev.Handler(s, &elicit.HandlerOptions{MaxSessionsPerClient: 5000}))
}

// Command evlibmcpgo is the bare mcp-go server's delete_contacts
// (internal/baremcpgo: the same tool, declared the same way, at the same
// path) with its elicitation asked through elicitvault's mcp-go front-end
// (mcpgo.New, elicit.Confirm, Server.Handler) on the memory store, and
// nothing else: what elicitvault's front-end costs an mcp-go server, apart
// from what `elicitvault serve --sdk mcp-go` adds (its tools declared from
// go-sdk handlers, whose richer input schemas mcp-go reads again on every
// request, OpenTelemetry, the other drivers). TestE2EBench measures it in
// serve's place with ELICITVAULT_E2EBENCH_SDK=mcp-go and
// ELICITVAULT_E2EBENCH_EV=lib.
//
//	MCP_ELICITATION_SECRET=... evlibmcpgo --addr 127.0.0.1:0
//
// It prints "evlib: MCP at http://ADDR/mcp" on stderr once it listens.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/integration/internal/bareserve"
	"github.com/elicitvault/elicitvault/integration/internal/evmemory"
	"github.com/elicitvault/elicitvault/mcpgo"
)

// deleteContacts is baremcpgo's tool, asking with elicit.Confirm.
func deleteContacts(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := req.GetInt("count", 0)
	if n <= 0 {
		n = 47
	}
	ok, err := elicit.Confirm(ctx, fmt.Sprintf("Delete %d contacts? This cannot be undone.", n))
	if err != nil {
		return nil, err
	}
	if !ok {
		return mcp.NewToolResultText("Nothing was deleted."), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("Deleted %d contacts.", n)), nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	log.SetFlags(0)
	ev := evmemory.Elicitor("evlibmcpgo")
	s := server.NewMCPServer("evlib", "1", server.WithToolCapabilities(false), server.WithElicitation())
	front := mcpgo.New(ev, s, nil)
	s.AddTool(mcp.NewTool("delete_contacts",
		mcp.WithDescription("Deletes contacts after the user confirms."),
		mcp.WithNumber("count")), deleteContacts)
	bareserve.Serve("evlib", *addr, front.Handler(nil))
}

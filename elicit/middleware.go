package elicit

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// receiving is the Elicitor's receiving middleware: it puts the Elicitor in
// every request's context, and runs the rounds of tool calls on
// 2026-07-28.
func (e *Elicitor) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = NewContext(ctx, e)
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil || !ours(ctr.Params.RequestState) {
			return next(ctx, method, req)
		}
		c, err := e.newCall(ctr)
		if err != nil || !c.inputRequests() {
			return next(ctx, method, req)
		}
		return e.mrtr(ctx, ctr, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

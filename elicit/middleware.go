package elicit

import (
	"context"
	"errors"

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
			return urlRequired(next(ctx, method, req))
		}
		return e.mrtr(ctx, ctr, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

// urlRequired turns a handler's *URLRequiredError, returned as an error or
// as a tool error result, into the protocol error -32042.
func urlRequired(res mcp.Result, err error) (mcp.Result, error) {
	cause := err
	if cause == nil {
		if tr, ok := res.(*mcp.CallToolResult); ok && tr != nil {
			cause = tr.GetError()
		}
	}
	var ue *URLRequiredError
	if errors.As(cause, &ue) {
		return nil, ue.wireError()
	}
	return res, err
}

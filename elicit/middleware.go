package elicit

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// receiving is the Elicitor's receiving middleware.
func (e *Elicitor) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = NewContext(ctx, e)
		return next(ctx, method, req)
	}
}

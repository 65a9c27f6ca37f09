package elicit

import (
	"context"
	"errors"
	"github.com/elicitvault/elicitvault/internal/engine"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// receiving is the Elicitor's receiving middleware: it puts the Elicitor in
// every request's context, keeps the client's logging level, lists and
// serves FallbackTool, and runs every tool call in a round (see round): on
// 2026-07-28 the rounds of input requests, everywhere the stop of an
// LLM-mediated elicitation.
func (e *Elicitor) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = context.WithValue(ctx, elicitorKey{}, e)
		switch method {
		case "tools/call":
		case "tools/list":
			return e.listTools(ctx, req, next)
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
			if sl, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && err == nil && sl.Session != nil && sl.Params != nil {
				e.sessions.info(sl.Session).lvl.Store(sl.Params.Level)
			}
			return res, err
		default:
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil || !ours(ctr.Params.RequestState) {
			return next(ctx, method, req)
		}
		peer, err := e.newPeer(ctx, ctr)
		if err != nil {
			ctx, done, err := e.track(ctx, engine.Identity{})
			if err != nil {
				return nil, err
			}
			defer done()
			return urlRequired(next(ctx, method, req))
		}
		ctx = engine.WithPeer(ctx, peer)
		c := newCall(peer)
		if ctr.Params.Name == FallbackTool && e.enabled(LLMMediated) {
			return e.sendResult(ctx, c, ctr, next)
		}
		ctx, done, err := e.track(ctx, c.who)
		if err != nil {
			return nil, err
		}
		defer done()
		if c.inputRequests() {
			return e.mrtr(ctx, c, ctr, func(ctx context.Context) (mcp.Result, error) {
				return next(ctx, method, req)
			})
		}
		rd := &round{}
		res, err := next(context.WithValue(ctx, roundKey{}, rd), method, req)
		return e.finish(ctx, c, rd, res, err)
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

package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// render is mcp-go's answer to a call that stopped (engine.Stop): an
// input-required result (2026-07-28 only, so that mcp-go's legacy bridge
// never sees one), the tool result of an LLM-mediated elicitation, or
// the error -32042, which mcp-go sends with its data (before 2026-07-28
// only).
func render(stop *engine.Stop) (*mcp.CallToolResult, error) {
	switch {
	case stop.InputRequests != nil:
		b := server.NewInputRequestBuilder(stop.RequestState)
		for key, p := range stop.InputRequests {
			b.Elicit(key, params(p))
		}
		return b.ToolResult(), nil
	case stop.Pending != nil:
		res := mcp.NewToolResultText(stop.Pending.Text)
		if stop.Pending.Meta != nil {
			res.Meta = mcp.NewMetaFromMap(stop.Pending.Meta)
		}
		return res, nil
	}
	ps := make([]mcp.ElicitationParams, len(stop.URLRequired))
	for i, p := range stop.URLRequired {
		ps[i] = params(p)
	}
	return nil, mcp.URLElicitationRequiredError{Elicitations: ps}
}

// params converts the params of an elicitation request; the schema stays
// raw JSON, in the server's order.
func params(p *engine.ElicitParams) mcp.ElicitationParams {
	out := mcp.ElicitationParams{Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
	if len(p.RequestedSchema) > 0 {
		out.RequestedSchema = p.RequestedSchema
	}
	return out
}

// answer serves a call of the fallback tool (engine.Engine.Answer). The
// continuation runs the handler of the tool that asked, as registered on
// m (without the server's tool middlewares: the engine's context carries
// the continued call).
func (f *Server) answer(ctx context.Context, p *peer, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	var herr error
	ans, err := f.eng.Answer(ctx, p, func(ctx context.Context, tool string, args json.RawMessage) error {
		st := f.m.GetTool(tool)
		if st == nil {
			return fmt.Errorf("elicit: the tool %q is not on this server", tool)
		}
		creq := mcp.CallToolRequest{}
		creq.Params.Name = tool
		creq.Params.Meta = req.Params.Meta
		creq.Params.RawArguments = args
		if len(args) > 0 {
			var a any
			if json.Unmarshal(args, &a) == nil {
				creq.Params.Arguments = a
			}
		}
		res, herr = st.Handler(ctx, creq)
		return herr
	})
	var ip *engine.InvalidParamsError
	switch {
	case errors.As(err, &ip):
		return nil, err
	case err != nil:
		return nil, err
	case ans.ToolError != "":
		return mcp.NewToolResultError(ans.ToolError), nil
	case ans.Replayed != nil:
		var r mcp.CallToolResult
		if err := json.Unmarshal(ans.Replayed, &r); err != nil {
			return nil, fmt.Errorf("elicit: the kept result does not decode: %w", err)
		}
		return &r, nil
	case ans.Stop != nil:
		res, herr = render(ans.Stop)
	}
	if herr == nil && res != nil && ans.Keep != nil {
		ans.Keep(ctx, res)
	}
	return res, herr
}

// listFallback is the tool filter that shows the fallback tool only to
// the clients that need it: this request's modes (ListsFallbackTool).
func (f *Server) listFallback(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	form, url := requestModes(ctx)
	if f.eng.ListsFallbackTool(form, url) {
		return tools
	}
	out := tools[:0:0]
	for _, t := range tools {
		if t.Name != engine.FallbackTool {
			out = append(out, t)
		}
	}
	return out
}

// requestModes reads the elicitation modes of the request of ctx.
func requestModes(ctx context.Context) (form, url bool) {
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.Modern {
		return modes(pi.ClientCapabilities)
	}
	if ci, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		c := ci.GetClientCapabilities()
		return modes(&c)
	}
	return false, false
}

// fallbackTool is the fallback tool as mcp-go lists it.
func fallbackTool() mcp.Tool {
	t := mcp.NewToolWithRawSchema(engine.FallbackTool, engine.FallbackToolDescription, engine.FallbackToolSchema)
	t.Title = engine.FallbackToolTitle
	return t
}

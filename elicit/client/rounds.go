package client

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRounds bounds the rounds of one CallTool.
const maxRounds = 10

// errTooManyRounds (an ErrRefused) is returned by CallTool when the server
// keeps asking.
var errTooManyRounds = fmt.Errorf("%w: the server asked for input too many times", ErrRefused)

// CallTool calls a tool on a session whose client answers input requests
// itself (mcp.MultiRoundTripOptions Disabled): while the result is
// input-required (protocol 2026-07-28), it answers each elicitation of
// the result through h and calls the tool again with the responses and
// the requestState echoed, at most 10 times. A session with the
// go-sdk's own multi-round-trip middleware never sees such a result, and
// CallTool is then a plain CallTool. An input request that is not an
// elicitation is an error; a server that asks more than that is
// ErrRefused.
func (h *Handler) CallTool(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	params := *p
	for round := 0; ; round++ {
		res, err := cs.CallTool(ctx, &params)
		if err != nil || !res.NeedsInput() {
			return res, err
		}
		if round+1 >= maxRounds {
			return nil, errTooManyRounds
		}
		responses := mcp.InputResponseMap{}
		for key, ir := range res.InputRequests {
			ep, ok := ir.(*mcp.ElicitParams)
			if !ok {
				return nil, fmt.Errorf("client: input request %q is a %T, not an elicitation", key, ir)
			}
			r, err := h.elicit(ctx, &mcp.ElicitRequest{Session: cs, Params: ep})
			if err != nil {
				return nil, err
			}
			responses[key] = r
		}
		params.InputResponses, params.RequestState = responses, res.RequestState
	}
}

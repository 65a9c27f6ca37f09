package fronttest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ask is the arguments of the tool "ask" of [AddAsk]: the elicitation to
// ask for, with its schema as JSON.
type Ask struct {
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"`
	Schema  string `json:"schema,omitempty"`
	URL     string `json:"url,omitempty"`
}

// AskLog is what the tool "ask" of [AddAsk] saw.
type AskLog struct {
	mu        sync.Mutex
	caps      []*mcp.ElicitationCapabilities
	responses []string
}

// Got returns the elicitation capabilities the client declared, one a
// call, and every response that reached the tool, as JSON.
func (l *AskLog) Got() ([]*mcp.ElicitationCapabilities, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*mcp.ElicitationCapabilities(nil), l.caps...), append([]string(nil), l.responses...)
}

// AddAsk adds to s, a go-sdk server of its own (no elicitvault), the tool
// "ask": it returns an input request "q" for the elicitation in its
// arguments ([Ask]) and, called again with the response, answers that
// response as JSON. On 2025-11-25 the go-sdk server turns the input
// request into elicitation/create.
func AddAsk(s *mcp.Server) *AskLog {
	l := &AskLog{}
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, in Ask) (*mcp.CallToolResult, any, error) {
		var caps *mcp.ElicitationCapabilities
		if c := req.ClientCapabilities(); c != nil {
			caps = c.Elicitation
		}
		l.mu.Lock()
		l.caps = append(l.caps, caps)
		l.mu.Unlock()
		if r, ok := req.Params.InputResponses["q"]; ok {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, nil, err
			}
			l.mu.Lock()
			l.responses = append(l.responses, string(b))
			l.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		}
		p := &mcp.ElicitParams{Mode: in.Mode, Message: in.Message, URL: in.URL}
		if in.Schema != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(in.Schema), &m); err != nil {
				return nil, nil, err
			}
			p.RequestedSchema = m
		}
		if in.Mode == "url" {
			p.ElicitationID = "e1"
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": p}, RequestState: "s"}, nil, nil
	})
	return l
}

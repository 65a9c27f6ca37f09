package fronttest

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text is the text of a go-sdk tool result: its text contents, joined.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

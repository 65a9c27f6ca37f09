package client

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Names the package keeps unexported, for its external tests.
var (
	CheckURL       = checkURL
	NewFormRequest = newFormRequest
)

const MaxRounds = maxRounds

// Capabilities is what Install declares.
func (h *Handler) Capabilities() *mcp.ElicitationCapabilities { return h.capabilities() }

package client

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names the package keeps unexported, for its external tests.
var (
	CheckURL       = checkURL
	NewFormRequest = newFormRequest
)

const MaxRounds = maxRounds

// Capabilities is what Install declares.
func (h *Handler) Capabilities() *mcp.ElicitationCapabilities { return h.capabilities() }

// The reasons of a refusal, each an ErrRefused.
var (
	ErrSecretField    = errSecretField
	ErrInvalidAnswer  = errInvalidAnswer
	ErrRefusedURL     = errRefusedURL
	ErrInvalidRequest = errInvalidRequest
	ErrTooManyRounds  = errTooManyRounds
)

// Elicit is the ElicitationHandler that Install sets.
func (h *Handler) Elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return h.elicit(ctx, req)
}

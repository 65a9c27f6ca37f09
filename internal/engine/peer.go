package engine

import (
	"context"
	"encoding/json"
	"fmt"
)

// Peer is one tool call as the front-end of its MCP SDK presents it to the
// engine: who calls, what, over which protocol, and how to reach the
// client while the call runs. A front-end builds one per tool call, in its
// middleware, before the tool handler runs (WithPeer), and reads the
// capabilities per request, never from an earlier one.
//
// Every method must be safe to call from another goroutine than the
// handler's, and none may keep what it is given after it returns.
type Peer interface {
	// Call describes the call. The engine does not modify it.
	Call() *CallInfo

	// Elicit sends elicitation/create to the client and waits for its
	// reply, or for ctx (2025-06-18 and 2025-11-25 only). The reply's
	// content is the client's JSON as it came, which the engine validates:
	// a front-end must not fill in defaults or decode it into typed
	// fields first. When the client answers with a JSON-RPC error, the
	// error is a *ClientError with its code alone.
	Elicit(ctx context.Context, p *ElicitParams) (*Reply, error)

	// NotifyComplete sends notifications/elicitation/complete for the
	// URL-mode elicitation id to the session of the call, also after the
	// call returned (after -32042); errors are the front-end's to log.
	NotifyComplete(ctx context.Context, id string)

	// Progress sends notifications/progress for the call's progress token
	// (CallInfo.ProgressToken, which is not nil when the engine calls it).
	Progress(ctx context.Context, progress float64, message string)

	// Log sends notifications/message at level (an MCP logging level) to
	// the client.
	Log(ctx context.Context, level, logger, text string)
}

// CallInfo describes a tool call.
type CallInfo struct {
	// Who is the call's identity, computed once by the front-end.
	Who Identity
	// ClientID is the client ID of the call's HTTP request (ClientID of
	// the request's context, which the front-end's Handler sets): the
	// pending quotas count a stateless caller without a subject against
	// it (Identity.Client), which ignores it for any other; "" off HTTP.
	ClientID string

	// Tool and Arguments are the called tool and its arguments as they
	// came (the requestState binds their hash).
	Tool      string
	Arguments json.RawMessage

	// Protocol is the call's protocol version; FormMode and URLMode the
	// client's elicitation capabilities for this request.
	Protocol          string
	FormMode, URLMode bool

	// LogLevel is the logging level the client set ("" for none), and
	// ProgressToken the call's progress token (nil for none).
	LogLevel      string
	ProgressToken any
}

// ElicitParams are the params of an elicitation request (elicitation/create,
// an input request of 2026-07-28, an entry of -32042's data), in the wire's
// field names.
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
}

// Reply is a client's answer to an elicitation request, unvalidated.
type Reply struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// ClientError is the error of Peer.Elicit when the client answered with a
// JSON-RPC error, and so of the elicitation (elicit.ClientError). Only the
// code is kept: the message may quote the user's answer.
type ClientError struct {
	Code int64
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("elicit: the client answered with error code %d", e.Code)
}

type peerKey struct{}

// WithPeer returns ctx carrying p, the tool call that ctx's handler serves.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the tool call ctx carries, or nil.
func PeerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}

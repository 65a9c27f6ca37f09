package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	mgclient "github.com/mark3labs/mcp-go/client"
	mgtransport "github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
)

// mcpgoVersions are the protocol generations the mark3labs/mcp-go client
// is driven on: 2025-11-25 (elicitation/create in the middle of the call)
// and 2026-07-28 (input requests, the call retried with the answers and
// the requestState, which mcp-go's client does itself).
var mcpgoVersions = []string{"2025-11-25", "2026-07-28"}

// mcpgoClient is a mark3labs/mcp-go client whose user answers from a
// queue, for driving any server over Streamable HTTP: it declares form
// and URL mode (or the capability of its handler, see connectWith),
// records what it was asked and the completion notifications.
type mcpgoClient struct {
	user[*mgmcp.ElicitationResult, mgmcp.ElicitationParams]
}

func newMCPGoClient(t *testing.T) *mcpgoClient {
	return &mcpgoClient{newUser[*mgmcp.ElicitationResult, mgmcp.ElicitationParams](t)}
}

// Elicit is the client's mgclient.ElicitationHandler: the next answer.
func (c *mcpgoClient) Elicit(_ context.Context, req mgmcp.ElicitationRequest) (*mgmcp.ElicitationResult, error) {
	res, ok, visit := c.take(req.Params)
	if !ok {
		res = mgAnswer("cancel", nil)
	}
	if req.Params.Mode == mgmcp.ElicitationModeURL && res.Action == mgmcp.ElicitationResponseActionAccept && visit != nil {
		open(visit, req.Params.URL)
	}
	return res, nil
}

// connect connects an mcp-go client answering with c to endpoint on
// version, declaring form and URL mode.
func (c *mcpgoClient) connect(endpoint, version string) *mcpgoSession {
	c.t.Helper()
	caps := mgmcp.ClientCapabilities{Elicitation: &mgmcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}}
	return c.connectWith(endpoint, version, mgclient.WithClientCapabilities(caps), mgclient.WithElicitationHandler(c))
}

// connectWith connects an mcp-go client with opts (its capabilities and
// elicitation handler) to endpoint on version; completion notifications
// go to c.
func (c *mcpgoClient) connectWith(endpoint, version string, opts ...mgclient.ClientOption) *mcpgoSession {
	c.t.Helper()
	// The GET stream carries the completion notifications of a session;
	// mcp-go's client stays on the initialize handshake with it, and
	// 2026-07-28 has no session.
	var topts []mgtransport.StreamableHTTPCOption
	if !mgmcp.IsModernProtocol(version) {
		//lint:ignore SA1019 the GET stream is 2025-11-25's, which this client speaks here
		topts = append(topts, mgtransport.WithContinuousListening())
	}
	tr, err := mgtransport.NewStreamableHTTP(endpoint, topts...)
	if err != nil {
		c.t.Fatal(err)
	}
	cl := mgclient.NewClient(tr, append(opts, mgclient.WithProtocolVersion(version))...)
	ctx := c.t.Context()
	if err := cl.Start(ctx); err != nil {
		c.t.Fatalf("starting the mcp-go client: %v", err)
	}
	c.t.Cleanup(func() { cl.Close() })
	cl.OnNotification(func(n mgmcp.JSONRPCNotification) {
		if n.Method != string(mgmcp.MethodNotificationElicitationComplete) {
			return
		}
		if id, ok := n.Params.AdditionalFields["elicitationId"].(string); ok {
			c.completed(id)
		}
	})
	init := mgmcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mgmcp.Implementation{Name: "integration mcp-go", Version: "1"}
	res, err := cl.Initialize(ctx, init)
	if err != nil {
		c.t.Fatalf("connecting to %s on %s: %v", endpoint, version, err)
	}
	return &mcpgoSession{c: cl, version: res.ProtocolVersion}
}

// mcpgoSession is a connected mcp-go client.
type mcpgoSession struct {
	c       *mgclient.Client
	version string // negotiated
}

// call calls a tool and returns its text and whether it is an error
// result; a JSON-RPC error is returned as err.
func (s *mcpgoSession) call(ctx context.Context, name string, args any) (string, bool, error) {
	res, err := s.result(ctx, name, args)
	if err != nil {
		return "", false, err
	}
	return mgText(res), res.IsError, nil
}

// result calls a tool and returns its result.
func (s *mcpgoSession) result(ctx context.Context, name string, args any) (*mgmcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := mgmcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return s.c.CallTool(ctx, req)
}

// mgText is the text of an mcp-go tool result.
func mgText(res *mgmcp.CallToolResult) string {
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mgmcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

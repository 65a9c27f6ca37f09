package mcpgo

import (
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// StartClient starts an mcp-go client with opts over Streamable HTTP to
// url, sending the HTTP headers hdr (if any), and initializes it on
// version. The client is closed when the test ends. It returns the client
// and its transport (whose session ID some tests need).
func StartClient(t testing.TB, url string, hdr map[string]string, version string, opts ...mcpclient.ClientOption) (*mcpclient.Client, *transport.StreamableHTTP) {
	t.Helper()
	var topts []transport.StreamableHTTPCOption
	if hdr != nil {
		topts = append(topts, transport.WithHTTPHeaders(hdr))
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, append(opts, mcpclient.WithProtocolVersion(version))...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go client", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c, tr
}

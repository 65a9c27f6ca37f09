package integration

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
)

// Two `serve --stdio` at once, beside a listener on 127.0.0.1:8080 (the
// README's HTTP server): each serves its URL-mode pages on a free loopback
// port of its own, and connect_account completes through them. Before,
// --stdio bound 127.0.0.1:8080 and the second server died at start, its
// client seeing only "Connection closed".
func TestServeStdioTwoAtOnce(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err == nil {
		defer ln.Close() // stands for the README's HTTP server
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := servebin.Path(t)
	var links []string
	for i := range 2 {
		cmd := exec.Command(bin, "serve", "--stdio")
		cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+serveSecret, "MCP_ELICITATION_SECRET_PREVIOUS=")
		var link string
		client := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				link = req.Params.URL
				go func() {
					resp, err := http.PostForm(req.Params.URL, url.Values{"action": {"accept"}})
					if err != nil {
						t.Errorf("server %d's page: %v", i, err)
						return
					}
					resp.Body.Close()
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "connect_account"})
		if err != nil || res.IsError {
			t.Fatalf("server %d: connect_account: %v %v", i, res, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "Your Example account is connected." {
			t.Fatalf("server %d: %q", i, got)
		}
		if strings.HasPrefix(link, "http://127.0.0.1:8080/") {
			t.Fatalf("server %d serves its pages on the fixed port 8080: %s", i, link)
		}
		links = append(links, link)
	}
	u0, _ := url.Parse(links[0])
	u1, _ := url.Parse(links[1])
	if u0.Host == u1.Host {
		t.Fatalf("both servers on %s", u0.Host)
	}
}

// --addr still names the port when it is given, and a port that is taken
// is a clear message on stderr and exit status 1.
func TestServeStdioTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(servebin.Path(t), "serve", "--stdio", "--addr", ln.Addr().String())
	cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+serveSecret)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "cannot listen on "+ln.Addr().String()+" (--addr): bind: address already in use") {
		t.Fatalf("stderr: %s", out)
	}
}

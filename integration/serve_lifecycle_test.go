package integration

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeEphemeralSecret: without MCP_ELICITATION_SECRET serve runs with
// an ephemeral development secret and says so on stderr.
func TestServeEphemeralSecret(t *testing.T) {
	srv := startServe(t, []string{"MCP_ELICITATION_SECRET="})
	if log := srv.log(); !strings.Contains(log, "MCP_ELICITATION_SECRET is not set; using an ephemeral development secret") {
		t.Errorf("no warning on stderr:\n%s", log)
	}
	c := newGoClient(t)
	c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}})
	cs := c.connect(srv.mcpURL(), "2025-11-25")
	if out, _, err := callText(t.Context(), cs, "delete_contacts", nil); err != nil || out != "Deleted 47 contacts." {
		t.Errorf("got %q, %v", out, err)
	}
}

// TestServeGracefulShutdown: SIGTERM while a client is in the middle of an
// elicitation (it never answers) stops serve at once, with status 0; the
// tool call ends instead of waiting for the TTL.
func TestServeGracefulShutdown(t *testing.T) {
	srv := startServe(t, nil)
	asked := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.mcpURL(), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ended := make(chan error, 1)
	go func() {
		_, _, err := callText(context.Background(), cs, "delete_contacts", nil)
		ended <- err
	}()
	select {
	case <-asked:
	case <-time.After(15 * time.Second):
		t.Fatal("no elicitation within 15s")
	}
	start := time.Now()
	srv.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		srv.Cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, for the log below
		// The dump is on stderr when the process has exited.
		select {
		case <-srv.Done():
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("serve did not stop within 10s of SIGTERM:\n%s", srv.log())
	}
	if code := srv.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0:\n%s", code, srv.log())
	}
	if !strings.Contains(srv.log(), "elicitvault: serve: stopping") {
		t.Errorf("stderr:\n%s", srv.log())
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the tool call did not end when the server stopped")
	}
}

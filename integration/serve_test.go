package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
	"github.com/elicitvault/elicitvault/internal/fronttest"
)

// The tests in the serve_*_test.go files run `elicitvault serve`, the
// reference server, as an OS process, and talk to it with real clients:
// the go-sdk's and the TypeScript SDK's (interop/elicit-client.mjs).
//
// The binary is built once per test run, on first use, into a directory
// TestMain removes.

// serveSecret is the secret of the servers the tests start, unless a
// test says otherwise.
const serveSecret = "integration serve secret: 32 bytes or more, fixed"

func TestMain(m *testing.M) {
	code := m.Run()
	servebin.Remove()
	if bareDir != "" {
		os.RemoveAll(bareDir)
	}
	os.Exit(code)
}

// startPiped starts cmd with pipes to its stdin and from its stdout, and
// its stderr kept, or fails t.
func startPiped(t *testing.T, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser, stderr *strings.Builder) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout, stderr
}

// serveProc is a running `elicitvault serve`.
type serveProc struct {
	*servebin.Proc
	base string // http://127.0.0.1:PORT, where /mcp and /elicit/ are
}

// mcpURL is the Streamable HTTP endpoint.
func (p *serveProc) mcpURL() string { return p.base + "/mcp" }

func (p *serveProc) log() string { return p.Log() }

// startServe starts `elicitvault serve --addr 127.0.0.1:0 args...` with env
// added to the test's environment (MCP_ELICITATION_SECRET=serveSecret
// unless env sets it) and waits until it listens. When the test ends it
// stops the server with SIGTERM and checks that it exited 0, in time,
// without writing a secret, a token or a session ID to stderr.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	env = append([]string{"MCP_ELICITATION_SECRET=" + serveSecret, "MCP_ELICITATION_SECRET_PREVIOUS="}, env...)
	p := servebin.Serve(t, servebin.Path(t), env, append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	t.Cleanup(func() {
		err, inTime := p.Stop(15 * time.Second)
		switch {
		case !inTime:
			t.Errorf("elicitvault serve did not stop within 15s of SIGTERM:\n%s", p.Log())
			return
		case err != nil:
			t.Errorf("elicitvault serve exited with %v after SIGTERM:\n%s", err, p.Log())
		}
		if p.Leaks(serveSecret) {
			t.Errorf("elicitvault serve's stderr holds a secret or a token:\n%s", p.Log())
		}
	})
	return &serveProc{Proc: p, base: p.Base}
}

// goClient is a go-sdk client that answers elicitations from a queue and
// records the completion notifications.
type goClient struct {
	user[*mcp.ElicitResult, *mcp.ElicitParams]
}

func newGoClient(t *testing.T) *goClient {
	return &goClient{newUser[*mcp.ElicitResult, *mcp.ElicitParams](t)}
}

func (c *goClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			res, ok, visit := c.take(req.Params)
			if !ok {
				res = &mcp.ElicitResult{Action: "cancel"}
			}
			if req.Params.Mode == "url" && res.Action == "accept" && visit != nil {
				open(visit, req.Params.URL)
			}
			return res, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			c.completed(req.Params.ElicitationID)
		},
	}
}

// connect connects c to endpoint over Streamable HTTP, with protocol
// version ("" for the go-sdk's default).
func (c *goClient) connect(endpoint, version string) *mcp.ClientSession {
	c.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, c.options())
	cs, err := client.Connect(c.t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		c.t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	c.t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns its text and whether it is an error
// result; a JSON-RPC error is returned as err.
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return fronttest.Text(res), res.IsError, nil
}

// browse opens the consent page at u and submits its form to the
// callback, as the user's browser would, optionally on another server
// (callbackBase replaces the origin of the form's target). It returns the
// two HTTP statuses.
func browse(t *testing.T, u, callbackBase string) (page, callback int) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Errorf("consent page: %v", err)
		return 0, 0
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		return resp.StatusCode, 0
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("consent page CSP = %q", csp)
	}
	target, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	target, err = target.Parse(strings.ReplaceAll(string(m[1]), "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	if callbackBase != "" {
		b, _ := url.Parse(callbackBase)
		target.Scheme, target.Host = b.Scheme, b.Host
	}
	resp, err = http.Post(target.String(), "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Errorf("callback: %v", err)
		return http.StatusOK, 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return http.StatusOK, resp.StatusCode
}

// errData returns the data of a JSON-RPC error.
func errData(err error) json.RawMessage {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Data
	}
	return nil
}

// errCode returns the JSON-RPC code of err, or 0.
func errCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

package integration

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/webdriver"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
)

// The reference server on mark3labs/mcp-go (serve --sdk mcp-go), driven
// by the same real clients and flows as on the go-sdk.

func TestServeSDKMCPGoGoClient(t *testing.T) {
	serveGoSDK(t, startServe(t, nil, "--sdk", "mcp-go"), goVersions)
}

func TestServeSDKMCPGoMCPGoClient(t *testing.T) {
	serveMCPGoClient(t, startServe(t, nil, "--sdk", "mcp-go"), mcpgoVersions)
}

// TestServeSDKMCPGoLLMFallback: the LLM-mediated fallback on serve --sdk
// mcp-go, with an mcp-go client that cannot elicit.
func TestServeSDKMCPGoLLMFallback(t *testing.T) {
	serveMCPGoLLMFallback(t, startServe(t, nil, "--sdk", "mcp-go"))
}

// TestServeSDKMCPGoTypeScript drives serve --sdk mcp-go with the clients
// of the TypeScript SDK: v1 (1.32.2, 2025-11-25) and v2 (2.4.0) on both
// protocol generations.
func TestServeSDKMCPGoTypeScript(t *testing.T) {
	nodeClient(t)
	srv := startServe(t, nil, "--sdk", "mcp-go", "--conformance")
	t.Run("v1", func(t *testing.T) {
		rep, _ := runTS(t, &tsPlan{Transport: "http", URL: srv.mcpURL(), Steps: tsSteps})
		checkTS(t, rep, "2025-11-25")
	})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("v2/"+version, func(t *testing.T) {
			rep, _ := runTS(t, &tsPlan{SDK: "v2", Version: version, Transport: "http", URL: srv.mcpURL(), Steps: tsSteps})
			checkTS(t, rep, version)
		})
	}
}

// TestServeSDKMCPGoChromium: URL mode on serve --sdk mcp-go with the
// mcp-go client, the user choosing on the consent page in Chromium.
func TestServeSDKMCPGoChromium(t *testing.T) {
	serveMCPGoChromium(t, webdriver.Start(t), startServe(t, nil, "--sdk", "mcp-go"), mcpgoVersions)
}

// TestServeSDKMCPGoStdio: serve --stdio --sdk mcp-go with the go-sdk
// client: a confirmation, and URL mode through the page the server
// serves on its loopback port.
func TestServeSDKMCPGoStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(servebin.Path(t), "serve", "--stdio", "--sdk", "mcp-go")
	cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+serveSecret, "MCP_ELICITATION_SECRET_PREVIOUS=")
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}
			go func() {
				resp, err := http.PostForm(req.Params.URL, url.Values{"action": {"accept"}})
				if err != nil {
					t.Errorf("the server's page: %v", err)
					return
				}
				resp.Body.Close()
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for tool, want := range map[string]string{
		"delete_contacts": "Deleted 47 contacts.",
		"connect_account": "Your Example account is connected.",
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", tool, res, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want {
			t.Fatalf("%s: %q, want %q", tool, got, want)
		}
	}
}

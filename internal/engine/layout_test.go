package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineKnowsNoSDK holds that the engine imports no MCP SDK, so that
// each SDK's front-end builds on it without the other SDK: nothing in the
// dependencies of internal/engine, the packages under it,
// internal/httpbody and internal/clientid, which both front-ends share
// too (their tests included), is the go-sdk or mark3labs/mcp-go.
func TestEngineKnowsNoSDK(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not available")
	}
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...", "../httpbody", "../clientid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range []string{"github.com/elicitvault/elicitvault/internal/engine", "github.com/elicitvault/elicitvault/internal/httpbody", "github.com/elicitvault/elicitvault/internal/clientid"} {
		if !strings.Contains(string(out), pkg) {
			t.Fatalf("%s was not listed:\n%s", pkg, out)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, sdk := range []string{"github.com/modelcontextprotocol/", "github.com/mark3labs/"} {
			if strings.HasPrefix(line, sdk) {
				t.Errorf("the engine depends on %s", line)
			}
		}
	}
}

package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineKnowsNoSDK holds that the engine imports no MCP SDK, so that
// each SDK's front-end builds on it without the other SDK: nothing in the
// dependencies of internal/engine (its tests included) is the go-sdk or
// mark3labs/mcp-go.
func TestEngineKnowsNoSDK(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not available")
	}
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/elicitvault/elicitvault/internal/engine") {
		t.Fatalf("the engine was not listed:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, sdk := range []string{"github.com/modelcontextprotocol/", "github.com/mark3labs/"} {
			if strings.HasPrefix(line, sdk) {
				t.Errorf("the engine depends on %s", line)
			}
		}
	}
}

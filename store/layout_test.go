package store_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStoresKnowNoCrypto holds the design's rule that a store holds opaque
// keys and sealed bytes only: nothing under store/, backends included,
// imports the key schedule, the envelope, the keyring or the tokens.
func TestStoresKnowNoCrypto(t *testing.T) {
	out := goList(t, "", "list", "-deps", "-test", "-f", "{{.ImportPath}}",
		"./store/...", "./store/redis/...", "./store/postgres/...")
	if !strings.Contains(out, "github.com/elicitvault/elicitvault/store/redis") ||
		!strings.Contains(out, "github.com/elicitvault/elicitvault/store/postgres") {
		t.Fatalf("the backends were not listed:\n%s", out)
	}
	for _, forbidden := range []string{"internal/keyschedule", "internal/envelope", "internal/ring", "internal/token", "keyring"} {
		path := "github.com/elicitvault/elicitvault/" + forbidden
		for _, line := range strings.Split(out, "\n") {
			if line == path || strings.HasPrefix(line, path+"/") {
				t.Errorf("a store package depends on %s", line)
			}
		}
	}
}

// TestCoreModuleHasNoDrivers holds that a user of the core module (memory
// store) never downloads a database driver, a container library or the
// other MCP SDK (mark3labs/mcp-go, which the mcpgo module brings): they
// are not in the core module's graph at all.
func TestCoreModuleHasNoDrivers(t *testing.T) {
	out := goList(t, "off", "list", "-m", "all")
	if !strings.Contains(out, "github.com/modelcontextprotocol/go-sdk") {
		t.Fatalf("unexpected module list:\n%s", out)
	}
	for _, forbidden := range []string{"redis", "pgx", "jackc", "testcontainers", "docker", "lib/pq", "mark3labs"} {
		if strings.Contains(out, forbidden) {
			t.Errorf("the core module's graph lists %q", forbidden)
		}
	}
}

func goList(t *testing.T, gowork string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not available")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	if gowork != "" {
		cmd.Env = append(cmd.Environ(), "GOWORK="+gowork)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBackendsImportNoCoreInternal holds that the backend modules use the
// core module's published API only: an internal package of the core module
// would tie every backend release to one core release.
func TestBackendsImportNoCoreInternal(t *testing.T) {
	out := goList(t, "", "list", "-deps", "-test", "-f", "{{.ImportPath}}",
		"./store/redis/...", "./store/postgres/...")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "github.com/elicitvault/elicitvault/") && strings.Contains(line, "/internal") &&
			!strings.HasPrefix(line, "github.com/elicitvault/elicitvault/store/redis") &&
			!strings.HasPrefix(line, "github.com/elicitvault/elicitvault/store/postgres") {
			t.Errorf("a backend depends on %s", line)
		}
	}
}

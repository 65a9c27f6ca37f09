package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestReadmeSnippetBuilds builds the "Use it in your server" program of the
// README as a module of its own, outside the workspace, against this
// checkout: the snippet a newcomer pastes compiles.
func TestReadmeSnippetBuilds(t *testing.T) {
	root, readme := readReadme(t)
	build(t, root, regexp.MustCompile("(?s)## Use it in your server\n\n```go\n(.*?)```").FindSubmatch(readme), "")
}

// TestReadmeMCPGoSnippetBuilds builds the README's program for
// mark3labs/mcp-go the same way, against this checkout's mcpgo module.
func TestReadmeMCPGoSnippetBuilds(t *testing.T) {
	root, readme := readReadme(t)
	m := regexp.MustCompile("(?s)On \\[mark3labs/mcp-go\\].*?```go\n(.*?)```").FindSubmatch(readme)
	build(t, root, m, "require github.com/elicitvault/elicitvault/mcpgo v0.0.0\n\nreplace github.com/elicitvault/elicitvault/mcpgo => "+filepath.Join(root, "mcpgo")+"\n")
}

// readReadme returns the checkout's root and its README.md, or skips t
// in -short mode (the tests build modules).
func readReadme(t *testing.T) (root string, readme []byte) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err = os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, readme
}

// build builds the program m[1] of the README as a module requiring this
// checkout, and extra.
func build(t *testing.T, root string, m [][]byte, extra string) {
	t.Helper()
	if m == nil {
		t.Fatal("README.md has no such go block")
	}
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", string(m[1]))
	write("go.mod", "module readme\n\ngo 1.26\n\nrequire github.com/elicitvault/elicitvault v0.0.0\n\nreplace github.com/elicitvault/elicitvault => "+root+"\n\n"+extra)
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "."}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
}

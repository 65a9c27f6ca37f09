// Package servebin gives the tests that run the elicitvault command its
// binary: $ELICITVAULT_BIN when set (scripts/loadbench profiles one whose
// symbols stay on disk), else one built on first use from the
// repository's cmd module (with the workspace's go.work, when there is
// one), once per test process.
package servebin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Path returns the path of the elicitvault binary, or fails t.
func Path(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if p := os.Getenv("ELICITVAULT_BIN"); p != "" {
			path = p
			return
		}
		dir, err = os.MkdirTemp("", "elicitvault-integration-")
		if err != nil {
			return
		}
		path = filepath.Join(dir, "elicitvault")
		_, here, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", path, "./elicitvault")
		cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..", "..", "cmd")
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build ./cmd/elicitvault: %v\n%s", berr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Remove removes the binary Path built, if any; a TestMain calls it once
// the tests have run.
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Package servebin runs `elicitvault serve` for the tests that drive it
// as a process ([Serve]), from the binary [Path] returns: $ELICITVAULT_BIN when set (scripts/loadbench profiles one whose
// symbols stay on disk), else one built on first use from the
// repository's cmd module (with the workspace's go.work, when there is
// one), once per test process.
package servebin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// listening is the line serve writes to stderr once it listens.
var listening = regexp.MustCompile(`serve: MCP at (http://\S+)/mcp`)

// Proc is a running `elicitvault serve`.
type Proc struct {
	Cmd *exec.Cmd
	// Base is the origin of the MCP endpoint (Base+"/mcp") and of the
	// pages, as serve's listening line names it.
	Base string
	// Line is that line, whole.
	Line string

	done chan struct{} // closed once Cmd has exited
	err  error         // Cmd.Wait's, once done is closed

	mu  sync.Mutex
	log strings.Builder
}

// Serve runs `bin serve args...` with env added to the test's
// environment, killed with the test binary, and waits until it writes
// where it listens. It fails t if serve exits first, or does not listen
// within 30 seconds (it is then killed).
func Serve(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, append([]string{"serve"}, args...)...), done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- []string{line, m[1]}:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	select {
	case m := <-found:
		p.Line, p.Base = m[0], m[1]
	case <-p.done:
		t.Fatalf("elicitvault serve exited before listening: %v\n%s", p.err, p.Log())
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatalf("elicitvault serve did not listen within 30s:\n%s", p.Log())
	}
	return p
}

// Log returns what serve wrote to stderr so far.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Done is closed once serve has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Kill kills serve (SIGKILL) and waits until it has exited.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	<-p.done
}

// Stop sends serve SIGTERM and waits up to timeout for it to exit; then
// it kills it. It returns how serve exited, and whether it did within
// timeout.
func (p *Proc) Stop(timeout time.Duration) (exit error, inTime bool) {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err, true
	case <-time.After(timeout):
		p.Kill()
		return p.err, false
	}
}

// Leaks reports whether serve's stderr holds one of secrets, a token
// (ev1., ev2.) or a token= parameter.
func (p *Proc) Leaks(secrets ...string) bool {
	log := p.Log()
	for _, s := range append(secrets, "ev1.", "ev2.", "token=") {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

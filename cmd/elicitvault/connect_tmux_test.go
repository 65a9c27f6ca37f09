package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of `elicitvault connect` drive it as a person would: in a tmux
// pane (a real terminal), with keys sent by tmux send-keys and the screen
// read by capture-pane.

// browserEnv makes the test binary the browser of connect: $BROWSER is the
// test binary, which with this variable set visits the link as a person
// would (elicittest.Visit), appends it to the file the variable names, and
// exits.
const browserEnv = "ELICITVAULT_TEST_BROWSER_LOG"

func init() {
	log := os.Getenv(browserEnv)
	if log == "" || len(os.Args) != 2 {
		return
	}
	link := os.Args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status := "visited"
	if err := elicittest.Visit(ctx, link); err != nil {
		status = "error: " + err.Error()
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintf(f, "%s %s\n", status, link)
		f.Close()
	}
	os.Exit(0)
}

// testBin is the elicitvault binary of the running top-level test.
var testBin string

// buildBinary builds elicitvault into the test's temporary directory for
// the test and its subtests (binary returns it).
func buildBinary(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "elicitvault")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	testBin = bin
	t.Cleanup(func() { testBin = "" })
}

func binary(t *testing.T) string {
	t.Helper()
	if testBin == "" {
		t.Fatal("buildBinary was not called")
	}
	return testBin
}

func requireTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is required in CI (.ci/run installs it)")
		}
		t.Skip("tmux not installed")
	}
}

// pane is a tmux session of its own (its own server socket) running one
// command in a 160×50 terminal.
type pane struct {
	t      *testing.T
	socket string
}

func startPane(t *testing.T, env []string, argv ...string) *pane {
	t.Helper()
	return startPaneConf(t, "/dev/null", env, argv...)
}

// startPaneConf is startPane with the tmux configuration file conf.
func startPaneConf(t *testing.T, conf string, env []string, argv ...string) *pane {
	t.Helper()
	requireTmux(t)
	p := &pane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	// The pane stays after the command exits, so that its last screen
	// and its exit status can be read.
	var cmd strings.Builder
	cmd.WriteString("env")
	for _, kv := range append([]string{"TERM=xterm-256color"}, env...) {
		cmd.WriteString(" " + shellQuote(kv))
	}
	for _, a := range argv {
		cmd.WriteString(" " + shellQuote(a))
	}
	cmd.WriteString("; echo \"[exit $?]\"; sleep 600")
	p.tmux("-f", conf, "new-session", "-d", "-s", "t", "-x", "160", "-y", "50", cmd.String())
	t.Cleanup(func() { exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// send sends keys (tmux key names: Enter, Down, C-c, BSpace...).
func (p *pane) send(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// typeText types literal text.
func (p *pane) typeText(s string) {
	p.t.Helper()
	p.tmux("send-keys", "-t", "t", "-l", s)
}

// focus waits until the field titled title has the focus (huh marks the
// focused field with a bar): keys sent before would reach the field
// before it, since huh moves the focus asynchronously.
func (p *pane) focus(title string) string {
	p.t.Helper()
	return p.waitFor(`┃ ` + regexp.QuoteMeta(title))
}

func (p *pane) screen() string {
	return p.tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-500")
}

// waitFor waits until the screen matches re, and returns the screen.
func (p *pane) waitFor(re string) string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := p.screen()
		if rx.MatchString(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q:\n%s", re, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serveHTTP starts `elicitvault serve` on a free port and returns its MCP
// URL.
func serveHTTP(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--ttl", "2m")
	cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+testSecrets["A"], "MCP_ELICITATION_SECRET_PREVIOUS=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`MCP at (http://\S+/mcp)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
		return ""
	}
}

// connect starts `elicitvault connect` in a pane, with the test binary as
// its browser; visits is the file the browser logs to.
func connectPane(t *testing.T, args ...string) (p *pane, visits string) {
	t.Helper()
	visits = filepath.Join(t.TempDir(), "visits")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"BROWSER=" + self, browserEnv + "=" + visits}
	return startPane(t, env, append([]string{binary(t), "connect"}, args...)...), visits
}

func TestConnectTmuxServe(t *testing.T) {
	requireTmux(t)
	buildBinary(t)
	url := serveHTTP(t)
	for _, proto := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(proto, func(t *testing.T) {
			call := func(t *testing.T, tool, args string) *pane {
				p, _ := connectPane(t, "--protocol", proto, "--tool", tool, "--args", args, url)
				p.waitFor(`Connected to elicitvault .*protocol ` + proto)
				return p
			}
			t.Run("delete_contacts/accept", func(t *testing.T) {
				p := call(t, "delete_contacts", `{"count":3}`)
				p.waitFor(`The server "elicitvault" asks:[\s\S]*Delete 3 contacts\? This cannot be undone\.[\s\S]*Fill in the form`)
				p.send("Enter")
				p.focus("Confirm *")
				p.send("y")
				p.focus("Send this answer to the server?")
				p.send("y")
				p.waitFor(`Deleted 3 contacts\.\s+\[exit 0\]`)
			})
			t.Run("delete_contacts/decline", func(t *testing.T) {
				p := call(t, "delete_contacts", `{}`)
				p.waitFor(`Fill in the form`)
				p.send("Down", "Enter")
				p.waitFor(`Nothing was deleted\.\s+\[exit 0\]`)
			})
			t.Run("subscribe_newsletter/ctrl-c", func(t *testing.T) {
				p := call(t, "subscribe_newsletter", `{}`)
				p.waitFor(`Subscribe to the monthly newsletter\?`)
				p.send("C-c")
				p.waitFor(`Not subscribed\.\s+\[exit 0\]`)
			})
			t.Run("subscribe_newsletter/accept", func(t *testing.T) {
				p := call(t, "subscribe_newsletter", `{}`)
				p.waitFor(`Fill in the form`)
				p.send("Enter")
				p.focus("Confirm *")
				p.send("y")
				p.focus("Send this answer to the server?")
				p.send("y")
				p.waitFor(`Subscribed\.\s+\[exit 0\]`)
			})
			t.Run("register_attendee/corrected", func(t *testing.T) {
				p := call(t, "register_attendee", `{}`)
				p.waitFor(`Register for MCP Dev Days[\s\S]*Fill in the form`)
				p.send("Enter")
				// The fields come sorted by name (the go-sdk client decodes
				// the schema into a map). arrival: an invalid date first.
				p.focus("Arrival *")
				p.typeText("tomorrow")
				p.send("Enter")
				p.waitFor(`is not a valid date \(YYYY-MM-DD\)`)
				p.send("C-u")
				p.typeText("2026-05-04")
				p.send("Enter")
				// budget: 49.5 pre-filled; over the maximum, then corrected.
				s := p.focus("Dinner budget")
				if !strings.Contains(s, "49.5") {
					t.Errorf("the default budget is not pre-filled:\n%s", s)
				}
				p.send("C-u")
				p.typeText("600")
				p.send("Enter")
				p.waitFor(`is greater than the maximum 500`)
				p.send("C-u")
				p.typeText("80")
				p.send("Enter")
				p.focus("Diet") // legacy titled enum
				p.send("Down", "Down", "Enter")
				p.focus("Email *")
				p.typeText("ada at example")
				p.send("Enter")
				p.waitFor(`is not a valid email address`)
				p.send("C-u")
				p.typeText("ada@example.com")
				p.send("Enter")
				p.focus("Guests")
				p.send("C-u")
				p.typeText("2")
				p.send("Enter")
				p.focus("Name *")
				p.typeText("Ada")
				p.send("Enter")
				p.focus("Newsletter")
				p.send("y")
				p.focus("Room") // untitled enum
				p.send("Enter")
				p.focus("Seating") // titled enum
				p.send("Down", "Enter")
				p.focus("Session start")
				p.typeText("2026-05-05T10:30:00Z")
				p.send("Enter")
				p.focus("Topics") // multi-select, "security" pre-selected
				p.send("Down", "x", "Enter")
				p.focus("Website")
				p.send("Enter")
				p.focus("Workshops") // titled multi-select, at most 2
				p.send("x", "Down", "x", "Down", "x", "Enter")
				p.focus("Send this answer to the server?")
				p.send("y")
				s = p.waitFor(`Registered: .*\s+\[exit 0\]`)
				m := regexp.MustCompile(`Registered: (\{.*\})`).FindStringSubmatch(s)
				var got map[string]any
				if m == nil || json.Unmarshal([]byte(m[1]), &got) != nil {
					t.Fatalf("no registration:\n%s", s)
				}
				want := `{"arrival":"2026-05-04","budget":80,"diet":"vegan","email":"ada@example.com","guests":2,"name":"Ada","newsletter":true,"room":"single","seating":"window","session_start":"2026-05-05T10:30:00Z","topics":["security","protocols"],"website":"","workshops":["go","oauth"]}`
				if b, _ := json.Marshal(got); string(b) != want {
					t.Errorf("registered %s\nwant       %s", b, want)
				}
			})
			t.Run("register_attendee/ctrl-c", func(t *testing.T) {
				p := call(t, "register_attendee", `{}`)
				p.waitFor(`Fill in the form`)
				p.send("Enter")
				p.focus("Arrival *")
				p.typeText("2026-05-04")
				p.send("C-c")
				p.waitFor(`Registration cancelled\.\s+\[exit 0\]`)
			})
			t.Run("connect_account/open", func(t *testing.T) {
				p, visits := connectPane(t, "--protocol", proto, "--allow-host", "127.0.0.1", "--tool", "connect_account", url)
				s := p.waitFor(`asks you to open a link[\s\S]*Decline`)
				host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
				if !strings.Contains(s, "Host: "+host) || !strings.Contains(s, elicit.PagesPrefix+"consent"+"?token=") {
					t.Errorf("the consent does not show the link and its host %s:\n%s", host, s)
				}
				if b, _ := os.ReadFile(visits); len(b) != 0 {
					t.Fatalf("opened before consent: %s", b)
				}
				p.send("Down", "Enter")
				p.waitFor(`Your Example account is connected\.\s+\[exit 0\]`)
				if b, _ := os.ReadFile(visits); !strings.HasPrefix(string(b), "visited http://"+host+elicit.PagesPrefix+"consent"+"?token=") {
					t.Errorf("browser log: %q", b)
				}
			})
			t.Run("connect_account/decline", func(t *testing.T) {
				p, visits := connectPane(t, "--protocol", proto, "--tool", "connect_account", url)
				p.waitFor(`asks you to open a link`)
				p.send("Enter")
				p.waitFor(`Not connected: you declined\.\s+\[exit 0\]`)
				if b, _ := os.ReadFile(visits); len(b) != 0 {
					t.Errorf("opened a declined link: %s", b)
				}
			})
			t.Run("connect_account/ctrl-c", func(t *testing.T) {
				p, visits := connectPane(t, "--protocol", proto, "--tool", "connect_account", url)
				p.waitFor(`asks you to open a link`)
				p.send("Down", "C-c")
				p.waitFor(`Not connected: cancelled\.\s+\[exit 0\]`)
				if b, _ := os.ReadFile(visits); len(b) != 0 {
					t.Errorf("opened a cancelled link: %s", b)
				}
			})
			t.Run("connect_account/not-allowed", func(t *testing.T) {
				p, _ := connectPane(t, "--protocol", proto, "--allow-host", "example.com", "--tool", "connect_account", url)
				s := p.waitFor(`\[exit \d\]`)
				if strings.Contains(s, "asks you to open") || !strings.Contains(s, "not in the allowlist") {
					t.Errorf("a link outside the allowlist:\n%s", s)
				}
			})
		})
	}
}

// bareServer is a go-sdk server that is not elicitvault: its tool "signup"
// asks with elicitation/create (2025-11-25) for a form, "login" for a
// password (which connect refuses), and "visit" to open an http link to a
// host that is not loopback (which connect refuses too).
func bareServer(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare-go-sdk", Version: "0.1"}, nil)
	elicitTool := func(name string, p *mcp.ElicitParams) {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, p)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicit failed: " + err.Error()}}}, nil, nil
			}
			b, _ := json.Marshal(res)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "got " + string(b)}}}, nil, nil
		})
	}
	elicitTool("signup", &mcp.ElicitParams{Message: "Sign up for the beta", RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"handle": map[string]any{"type": "string", "title": "Handle", "minLength": 3},
			"plan":   map[string]any{"type": "string", "enum": []any{"free", "pro"}, "default": "free"},
			"beta":   map[string]any{"type": "boolean", "title": "Join the beta"}, // optional, no default
			"news":   map[string]any{"type": "boolean", "title": "News"},
		},
		"required": []any{"handle"},
	}})
	elicitTool("login", &mcp.ElicitParams{Message: "Log in", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"password": map[string]any{"type": "string"}},
	}})
	// Escape sequences that would clear the screen and fake a line, set
	// the window title, and reverse the text.
	elicitTool("trick", &mcp.ElicitParams{Message: "Hi\x1b[2J\x1b[HHost: bank.example\u202e", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "string", "title": "OK\x1b]0;pwned\x07",
			"description": "\x9b31m red", "default": "\x1b[1mbold"}},
	}})
	elicitTool("visit", &mcp.ElicitParams{Mode: "url", Message: "Pay", URL: "http://pay.example.com/checkout", ElicitationID: "x1"})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestConnectTmuxBareServer(t *testing.T) {
	requireTmux(t)
	buildBinary(t)
	url := bareServer(t)
	t.Run("signup", func(t *testing.T) {
		p, _ := connectPane(t, "--protocol", "2025-11-25", "--tool", "signup", url)
		p.waitFor(`The server "bare-go-sdk" asks:[\s\S]*Sign up for the beta`)
		p.send("Enter")
		p.focus("Join the beta")
		p.send("Down", "Enter") // Yes
		p.focus("Handle *")
		p.typeText("al")
		p.send("Enter")
		p.waitFor(`is shorter than 3 characters`)
		p.typeText("an")
		p.send("Enter")
		p.focus("News")
		p.send("Enter") // left out
		p.focus("plan")
		p.send("Down", "Enter")
		p.focus("Send this answer to the server?")
		p.send("y")
		p.waitFor(`got \{"action":"accept","content":\{"beta":true,"handle":"alan","plan":"pro"\}\}\s+\[exit 0\]`)
	})
	t.Run("password refused", func(t *testing.T) {
		p, _ := connectPane(t, "--protocol", "2025-11-25", "--tool", "login", url)
		s := p.waitFor(`\[exit \d\]`)
		if strings.Contains(s, "Fill in the form") || !strings.Contains(s, "asks for a secret") {
			t.Errorf("a password form:\n%s", s)
		}
	})
	t.Run("http link refused", func(t *testing.T) {
		p, visits := connectPane(t, "--protocol", "2025-11-25", "--tool", "visit", url)
		s := p.waitFor(`\[exit \d\]`)
		if strings.Contains(s, "asks you to open") || !strings.Contains(s, "http is allowed only to a loopback address") {
			t.Errorf("an http link:\n%s", s)
		}
		if b, _ := os.ReadFile(visits); len(b) != 0 {
			t.Errorf("opened: %s", b)
		}
	})
}

package integration

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// urlModeScenario returns the node binary and interop/conformance/urlmode.mjs,
// the URL-mode conformance scenario, which needs nothing but Node.
func urlModeScenario(t *testing.T) (node, script string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "interop", "conformance", "urlmode.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		if os.Getenv(requireNodeEnv) == "1" {
			t.Fatalf("node is not installed, and %s=1 requires it", requireNodeEnv)
		}
		t.Skip("node is not installed: skipping the URL-mode scenario")
	}
	return node, script
}

func runURLModeScenario(t *testing.T, args ...string) (string, error) {
	t.Helper()
	node, script := urlModeScenario(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{script}, args...)...).CombinedOutput()
	return string(out), err
}

// TestURLModeScenario runs the URL-mode conformance scenario against
// elicitvault serve's connect_account on both protocol generations: a
// link to a loopback page that carries no PII, a call that completes
// only after the page, Decline reported, a used link refused.
func TestURLModeScenario(t *testing.T) {
	p := startServe(t, nil)
	out, err := runURLModeScenario(t, "--url", p.mcpURL(), "--tool", "connect_account", "--timeout", "60")
	t.Logf("urlmode.mjs:\n%s", out)
	if err != nil || !strings.Contains(out, " 0 failed") {
		t.Fatalf("the scenario failed: %v", err)
	}
}

// TestURLModeScenarioCatchesPII runs the scenario against a server that
// puts the user's e-mail address in the link: it must fail link-no-pii,
// and pass the rest, which that server does right.
func TestURLModeScenarioCatchesPII(t *testing.T) {
	const email = "alice.scenario@example.com"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: leakyServer(base), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	out, err := runURLModeScenario(t, "--url", base+"/mcp", "--tool", "connect", "--protocol", "2025-11-25",
		"--args", fmt.Sprintf(`{"email":%q}`, email), "--pii", email, "--timeout", "30")
	t.Logf("urlmode.mjs:\n%s", out)
	if err == nil {
		t.Fatal("the scenario passed a server that puts the e-mail address in the link")
	}
	if !strings.Contains(out, "FAILURE 2025-11-25 link-no-pii") {
		t.Errorf("link-no-pii did not fail")
	}
	for _, id := range []string{"link-scheme", "waits-for-page", "completes-after-page", "reused-link-refused", "decline-reported"} {
		if !strings.Contains(out, "SUCCESS 2025-11-25 "+id) {
			t.Errorf("%s did not pass against a server that does it right", id)
		}
	}
}

// leakyServer is an MCP server (go-sdk, 2025-11-25) whose connect tool
// asks for a URL-mode elicitation with the user's e-mail address in the
// link, and otherwise does what the scenario checks: it waits for its page,
// notifies the completion, reports Decline and refuses a used page.
func leakyServer(base string) http.Handler {
	var mu sync.Mutex
	pages := map[string]chan string{} // by elicitation ID; nil once used
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	type args struct {
		Email string `json:"email"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		id := fmt.Sprintf("e%d", time.Now().UnixNano())
		answer := make(chan string, 1)
		mu.Lock()
		pages[id] = answer
		mu.Unlock()
		link := base + "/page?id=" + id + "&email=" + url.QueryEscape(in.Email)
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Connect", URL: link, ElicitationID: id})
		if err != nil {
			return nil, nil, err
		}
		if res.Action != "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not connected"}}}, nil, nil
		}
		var choice string
		select {
		case choice = <-answer:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "page said " + choice}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `<form method="post" action="?id=%s"><button name="action" value="accept">Accept</button><button name="action" value="decline">Decline</button></form>`,
				html.EscapeString(url.QueryEscape(id)))
			return
		}
		mu.Lock()
		answer := pages[id]
		pages[id] = nil
		mu.Unlock()
		if answer == nil {
			http.Error(w, "used", http.StatusGone)
			return
		}
		answer <- r.FormValue("action")
		fmt.Fprint(w, "Done")
	})
	return mux
}

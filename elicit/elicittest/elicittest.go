// Package elicittest runs the tools of an MCP server against a scripted
// user, for the tests of tool authors, on either SDK elicitvault serves:
// the go-sdk ([elicit.Elicitor.Handler]) and mark3labs/mcp-go (the Handler
// of the mcpgo module's Server).
//
// [Call] serves the server's MCP endpoint on a loopback HTTP server and
// connects a client to it, once for each protocol version (2025-11-25,
// where the server sends elicitation/create in the middle of the call, and
// 2026-07-28, where the call returns input requests and is called again
// with the answers and the requestState), calls the tool, and answers each
// elicitation with the next step of the script:
//
//	runs := elicittest.Call(t, ev.Handler(server, nil), "register", nil,
//		elicittest.Accept(map[string]any{"name": "Ada"}),
//		elicittest.Decline())
//	for _, r := range runs {
//		if r.Text() != "Registered Ada" { t.Errorf("%s: %s", r.Protocol, r.Text()) }
//	}
//
// The client declares form and URL mode. Every elicitation is recorded,
// as the server asked it, in [Run].Asked. An elicitation beyond the script
// fails the test and is cancelled. On 2026-07-28 the tool's handler runs
// again for each answer, as it does for real clients (see Reruns in the
// documentation of package elicit): a side effect before the elicitation
// happens twice in that run, which is what such a test should catch.
package elicittest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocols are the protocol versions Call runs a tool at.
var protocols = []string{"2025-11-25", "2026-07-28"}

// A Step is what the scripted user does when asked.
type Step struct {
	name    string
	answer  func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	urlOnly bool
	// visit, for OpenURL, completes the link's page after the answer.
	visit func(ctx context.Context, link string) error
}

// Accept fills in a form with content and submits it. The content is sent
// as is: the server validates it.
func Accept(content map[string]any) Step {
	return Step{name: "accept", answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}}
}

// Decline declines (a form or a link).
func Decline() Step {
	return Step{name: "decline", answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
}

// Cancel dismisses the question without choosing.
func Cancel() Step {
	return Step{name: "cancel", answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}
}

// OpenURL agrees to open the link of a URL-mode elicitation and completes
// what it leads to with visit (Visit if nil) before the client answers
// accept. It is a test failure on a form.
func OpenURL(visit func(ctx context.Context, link string) error) Step {
	if visit == nil {
		visit = Visit
	}
	// The client answers accept when the user agrees to open the link;
	// the page is completed meanwhile, as a person would. An error of
	// visit fails the test.
	return Step{name: "open the URL", urlOnly: true, visit: visit, answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
}

// ErrNoAnswer is the client's error for an elicitation its user never
// answered.
var ErrNoAnswer = errors.New("elicittest: the user did not answer")

// Never leaves the question unanswered for d (or until the server gives
// up, on 2025-11-25), after which the client fails the elicitation with
// ErrNoAnswer (on 2026-07-28, the call, which is never called again).
func Never(d time.Duration) Step {
	return Step{name: "never answer", answer: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
			return nil, ErrNoAnswer
		}
	}}
}

// Visit is what a person does with a link in a browser, for links of
// elicitvault and of servers like it: it loads the page and submits its
// first form that posts (a consent page, or the confirmation of a
// callback), without any field. It follows redirects and ignores scripts.
func Visit(ctx context.Context, link string) error {
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("elicittest: the page answered %d", resp.StatusCode)
	}
	m := postForm.FindSubmatch(body)
	if m == nil {
		return nil
	}
	target, err := resp.Request.URL.Parse(strings.ReplaceAll(string(m[1]), "&amp;", "&"))
	if err != nil {
		return err
	}
	post, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(url.Values{}.Encode()))
	if err != nil {
		return err
	}
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = http.DefaultClient.Do(post)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("elicittest: the form's target answered %d", resp.StatusCode)
	}
	return nil
}

var postForm = regexp.MustCompile(`(?i)<form[^>]*method="post"[^>]*action="([^"]*)"`)

// Question is an elicitation the server asked.
type Question struct {
	Mode          string // form or url
	Message       string
	Schema        map[string]any // form mode
	URL           string         // url mode
	ElicitationID string         // url mode
	Answer        string         // the step that answered it
}

// Run is the outcome of a call at one protocol version.
type Run struct {
	Protocol string
	Result   *mcp.CallToolResult // nil when Err is set
	Err      error               // a protocol error of the call
	Asked    []Question
	// Completed lists the elicitation IDs the server announced complete.
	Completed []string
}

// Text returns the text content of the result, "" if none.
func (r *Run) Text() string {
	if r.Result == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Result.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// IsError reports whether the tool returned an error result.
func (r *Run) IsError() bool { return r.Result != nil && r.Result.IsError }

// Call calls the tool name with args at each protocol version
// (2025-11-25, 2026-07-28), answering elicitations with the script, and
// returns a [Run] for each. endpoint serves MCP over Streamable HTTP at
// [elicit.MCPPath]: the Handler of the Elicitor installed on a go-sdk
// server, or of the mcpgo module's Server on an mcp-go one. Build it once
// per server and pass it to every Call: [elicit.Elicitor.Handler] installs
// middleware on the server each time.
func Call(t testing.TB, endpoint http.Handler, name string, args any, script ...Step) []*Run {
	t.Helper()
	runs := make([]*Run, 0, len(protocols))
	for _, v := range protocols {
		runs = append(runs, CallAt(t, endpoint, v, name, args, script...))
	}
	return runs
}

// CallAt is Call at one protocol version.
func CallAt(t testing.TB, endpoint http.Handler, version, name string, args any, script ...Step) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := &Run{Protocol: version}
	var mu sync.Mutex
	var answering sync.WaitGroup
	var visitErrs []error
	visitCtx, stopVisits := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopVisits()
	next := 0
	handler := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		answering.Add(1)
		defer answering.Done()
		p := req.Params
		q := Question{Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
		if q.Mode == "" {
			q.Mode = "form"
		}
		if s, ok := p.RequestedSchema.(map[string]any); ok {
			q.Schema = s
		}
		mu.Lock()
		i := next
		next++
		var step Step
		if i < len(script) {
			step = script[i]
			q.Answer = step.name
		} else {
			q.Answer = "cancel (beyond the script)"
		}
		run.Asked = append(run.Asked, q)
		mu.Unlock()
		if i >= len(script) {
			t.Errorf("elicittest: %s at %s: elicitation %d (%q) beyond the script of %d steps", name, version, i+1, p.Message, len(script))
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		if step.urlOnly && q.Mode != "url" {
			t.Errorf("elicittest: %s at %s: step %d (%s) for a form (%q)", name, version, i+1, step.name, p.Message)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		if step.visit != nil {
			answering.Add(1)
			go func() {
				defer answering.Done()
				if err := step.visit(visitCtx, p.URL); err != nil {
					mu.Lock()
					visitErrs = append(visitErrs, err)
					mu.Unlock()
				}
			}()
		}
		return step.answer(ctx, p)
	}
	completed := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "elicittest", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: handler,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationCompleteHandler: func(_ context.Context, n *mcp.ElicitationCompleteNotificationRequest) {
			select {
			case completed <- n.Params.ElicitationID:
			default:
			}
		},
	})
	srv := httptest.NewServer(endpoint)
	defer srv.Close()
	// A transport of its own, whose connections end with the call.
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + elicit.MCPPath, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("elicittest: client: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		cs.Close()
		t.Fatalf("elicittest: negotiated %s, want %s", got, version)
	}
	run.Result, run.Err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	// An answer still pending (a user who never answers) ends with the
	// session.
	cancel()
	cs.Close()
	answering.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, err := range visitErrs {
		t.Errorf("elicittest: %s at %s: visiting the link: %v", name, version, err)
	}
	for {
		select {
		case id := <-completed:
			run.Completed = append(run.Completed, id)
			continue
		default:
		}
		break
	}
	if next < len(script) {
		t.Errorf("elicittest: %s at %s: %d of %d steps used", name, version, next, len(script))
	}
	return run
}

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/integration/internal/servebin"
)

// requireNodeEnv, set to 1 (as CI sets it), turns a missing node or a
// missing interop/node_modules into a failure instead of a skip.
const requireNodeEnv = "ELICITVAULT_REQUIRE_NODE"

// nodeClient returns the node binary and the path of
// interop/elicit-client.mjs, whose dependencies npm ci installs.
func nodeClient(t *testing.T) (node, script string) {
	t.Helper()
	return nodeScript(t, "elicit-client.mjs", "@modelcontextprotocol/sdk")
}

// nodeScript returns the node binary and the path of interop/script,
// which needs the npm package pkg; without them it skips t, or fails it
// when ELICITVAULT_REQUIRE_NODE=1.
func nodeScript(t *testing.T, script, pkg string) (node, path string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "interop", script))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	node, err = exec.LookPath("node")
	switch {
	case err != nil:
		missing = "node is not installed"
	case !fileExists(filepath.Join(filepath.Dir(path), "node_modules", pkg, "package.json")):
		missing = "interop/node_modules lacks " + pkg + " (run npm ci in interop/)"
	}
	if missing != "" {
		if os.Getenv(requireNodeEnv) == "1" {
			t.Fatalf("%s, and %s=1 requires it", missing, requireNodeEnv)
		}
		t.Skip(missing + ": skipping the interop test with " + script)
	}
	return node, path
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// The plan and report of interop/elicit-client.mjs.
type (
	tsPlan struct {
		SDK       string `json:"sdk,omitempty"`     // "v1" (the default) or "v2"
		Version   string `json:"version,omitempty"` // the protocol version v2 pins
		Transport string `json:"transport"`
		// Capabilities are the client's (nil: form and URL elicitation).
		Capabilities any               `json:"capabilities,omitempty"`
		URL          string            `json:"url,omitempty"`
		Command      string            `json:"command,omitempty"`
		Args         []string          `json:"args,omitempty"`
		Env          map[string]string `json:"env,omitempty"`
		Steps        []tsStep          `json:"steps"`
	}
	tsStep struct {
		Tool          string         `json:"tool"`
		Args          map[string]any `json:"args,omitempty"`
		Answers       []tsAnswer     `json:"answers,omitempty"`
		Relay         *tsAnswer      `json:"relay,omitempty"`
		OnURLRequired string         `json:"onURLRequired,omitempty"`
	}
	tsAnswer struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content,omitempty"`
		Visit   bool           `json:"visit,omitempty"`
	}
	tsReport struct {
		Steps []struct {
			Tool         string `json:"tool"`
			Elicitations []struct {
				Mode            string         `json:"mode"`
				Message         string         `json:"message"`
				RequestedSchema map[string]any `json:"requestedSchema"`
				ElicitationID   string         `json:"elicitationId"`
				HasURL          bool           `json:"hasURL"`
			} `json:"elicitations"`
			Results []struct {
				Result *struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError bool `json:"isError"`
				} `json:"result"`
				Error *struct {
					Code int64 `json:"code"`
					Data struct {
						Elicitations []struct {
							Mode          string `json:"mode"`
							URL           string `json:"url"`
							ElicitationID string `json:"elicitationId"`
						} `json:"elicitations"`
					} `json:"data"`
				} `json:"error"`
			} `json:"results"`
			Visits []struct {
				Page     int `json:"page"`
				Callback int `json:"callback"`
			} `json:"visits"`
			Completed []string `json:"completed"`
		} `json:"steps"`
	}
)

// runTS runs the TypeScript SDK client with plan and returns its report
// and stderr (which, over stdio, holds the server's).
func runTS(t *testing.T, plan *tsPlan) (*tsReport, string) {
	t.Helper()
	node, script := nodeClient(t)
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, string(raw))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var rep tsReport
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); err != nil || jerr != nil {
		t.Fatalf("elicit-client.mjs: %v %v\nstdout: %s\nstderr: %s", err, jerr, stdout.Bytes(), stderr.Bytes())
	}
	return &rep, stderr.String()
}

// tsSteps is the plan both transports run: every action, invalid content,
// URL mode with the completion notification, -32042, and a conformance
// tool.
var tsSteps = []tsStep{
	{Tool: "delete_contacts", Answers: []tsAnswer{{Action: "accept", Content: map[string]any{"confirm": true}}}},
	{Tool: "delete_contacts", Answers: []tsAnswer{{Action: "decline"}}},
	{Tool: "register_attendee", Answers: []tsAnswer{{Action: "cancel"}}},
	// The TypeScript client sends what it is given: elicitvault checks.
	{Tool: "delete_contacts", Answers: []tsAnswer{{Action: "accept", Content: map[string]any{"confirm": "yes"}}}},
	{Tool: "register_attendee", Answers: []tsAnswer{{Action: "accept", Content: map[string]any{
		"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04", "workshops": []string{"go", "evals", "oauth"}}}}},
	{Tool: "register_attendee", Answers: []tsAnswer{{Action: "accept", Content: map[string]any{
		"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04", "guests": 3, "diet": "vegan"}}}},
	{Tool: "connect_account", Answers: []tsAnswer{{Action: "accept", Visit: true}}},
	{Tool: "connect_account", Args: map[string]any{"url_required_error": true}, OnURLRequired: "visit-and-retry"},
	{Tool: "test_elicitation", Args: map[string]any{"message": "Who are you?"}, Answers: []tsAnswer{
		{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}}},
}

// checkTS checks the report of tsSteps run at the protocol version.
func checkTS(t *testing.T, rep *tsReport, version string) {
	t.Helper()
	if len(rep.Steps) != len(tsSteps) {
		t.Fatalf("%d steps reported, want %d", len(rep.Steps), len(tsSteps))
	}
	result := func(i, j int) (string, bool) {
		t.Helper()
		s := rep.Steps[i]
		if len(s.Results) <= j || s.Results[j].Result == nil {
			t.Fatalf("step %d (%s): no result %d: %+v", i, s.Tool, j, s.Results)
		}
		var b strings.Builder
		for _, c := range s.Results[j].Result.Content {
			b.WriteString(c.Text)
		}
		return b.String(), s.Results[j].Result.IsError
	}
	expect := func(i int, want string) {
		t.Helper()
		if got, isErr := result(i, 0); got != want || isErr {
			t.Errorf("step %d (%s): got %q (error %v), want %q", i, rep.Steps[i].Tool, got, isErr, want)
		}
	}
	expect(0, "Deleted 47 contacts.")
	if el := rep.Steps[0].Elicitations; len(el) != 1 || el[0].Mode != "form" || el[0].Message != "Delete 47 contacts? This cannot be undone." {
		t.Errorf("step 0: elicitations %+v", el)
	}
	expect(1, "Nothing was deleted.")
	expect(2, "Registration cancelled.")
	if got, isErr := result(3, 0); !isErr || !strings.Contains(got, "/confirm") || strings.Contains(got, "yes") {
		t.Errorf("invalid type: got %q (error %v), want an error naming /confirm without the value", got, isErr)
	}
	if got, isErr := result(4, 0); !isErr || !strings.Contains(got, "/workshops") || strings.Contains(got, "evals") {
		t.Errorf("too many selections: got %q (error %v), want an error naming /workshops", got, isErr)
	}
	if got, isErr := result(5, 0); isErr || !strings.Contains(got, `"guests":3`) || !strings.Contains(got, `"diet":"vegan"`) ||
		!strings.Contains(got, `"room":"single"`) || !strings.Contains(got, `"budget":49.5`) {
		t.Errorf("form: got %q (error %v), want the answer with the defaults filled in", got, isErr)
	}

	url := rep.Steps[6]
	expect(6, "Your Example account is connected.")
	if len(url.Elicitations) != 1 || url.Elicitations[0].Mode != "url" || !url.Elicitations[0].HasURL {
		t.Fatalf("URL mode: elicitations %+v", url.Elicitations)
	}
	if len(url.Visits) != 1 || url.Visits[0].Page != 200 || url.Visits[0].Callback != 200 {
		t.Errorf("URL mode: visits %+v, want the consent page and the callback to answer 200", url.Visits)
	}
	if version >= "2026" {
		// 2026-07-28 has neither the elicitation's ID nor the completion
		// notification: the client's retry, held until the page was
		// answered, brought the result.
		if len(url.Completed) != 0 {
			t.Errorf("URL mode: completions %v on 2026-07-28", url.Completed)
		}
	} else if url.Elicitations[0].ElicitationID == "" || len(url.Completed) != 1 || url.Completed[0] != url.Elicitations[0].ElicitationID {
		t.Errorf("URL mode: elicitation %+v, completions %v, want the elicitation's", url.Elicitations[0], url.Completed)
	}

	req := rep.Steps[7]
	if version >= "2026" {
		// -32042 is of the protocols before 2026-07-28: there URL asks
		// with an input request, which this step's client cancels.
		expect(7, "Not connected: cancelled.")
		if len(req.Elicitations) != 1 || req.Elicitations[0].Mode != "url" {
			t.Errorf("2026-07-28, URL required: elicitations %+v, want the input request", req.Elicitations)
		}
		expect(8, `User response: action=accept, content={"email":"ada@example.com","username":"ada"}`)
		return
	}
	if len(req.Results) != 2 || req.Results[0].Error == nil || req.Results[0].Error.Code != -32042 {
		t.Fatalf("-32042: results %+v", req.Results)
	}
	els := req.Results[0].Error.Data.Elicitations
	if len(els) != 1 || els[0].Mode != "url" || els[0].ElicitationID == "" {
		t.Fatalf("-32042: elicitations %+v", els)
	}
	if len(req.Elicitations) != 0 {
		t.Errorf("-32042: the server sent elicitation/create too: %+v", req.Elicitations)
	}
	if len(req.Completed) != 1 || req.Completed[0] != els[0].ElicitationID {
		t.Errorf("-32042: completions %v, want the elicitation's", req.Completed)
	}
	if got, isErr := result(7, 1); got != "Your Example account is connected." || isErr {
		t.Errorf("-32042: the retry got %q (error %v)", got, isErr)
	}

	expect(8, `User response: action=accept, content={"email":"ada@example.com","username":"ada"}`)
}

// TestServeTypeScriptHTTP drives serve over Streamable HTTP with the
// TypeScript SDK's client (@modelcontextprotocol/sdk, protocol 2025-11-25).
func TestServeTypeScriptHTTP(t *testing.T) {
	nodeClient(t)
	srv := startServe(t, nil, "--conformance") // tsSteps end with a fixture
	rep, _ := runTS(t, &tsPlan{Transport: "http", URL: srv.mcpURL(), Steps: tsSteps})
	checkTS(t, rep, "2025-11-25")
}

// TestServeTypeScriptV2HTTP drives serve over Streamable HTTP with the
// client of the TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0), on
// both protocol generations: on 2026-07-28 it answers input requests and
// retries, on 2025-11-25 it answers elicitation/create.
func TestServeTypeScriptV2HTTP(t *testing.T) {
	nodeClient(t)
	srv := startServe(t, nil, "--conformance")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			rep, _ := runTS(t, &tsPlan{SDK: "v2", Version: version, Transport: "http", URL: srv.mcpURL(), Steps: tsSteps})
			checkTS(t, rep, version)
		})
	}
}

// TestServeTypeScriptV2LLMMediated: a client of the TypeScript SDK v2
// that cannot elicit, on both protocol generations, gets the question in
// the tool's result and answers through sendElicitationResult, as its model
// would: a confirmation, a declined form, and invalid content refused
// naming the field without its value.
func TestServeTypeScriptV2LLMMediated(t *testing.T) { serveTypeScriptV2LLMMediated(t) }

// TestServeSDKMCPGoTypeScriptV2LLMMediated: the same on serve --sdk mcp-go.
func TestServeSDKMCPGoTypeScriptV2LLMMediated(t *testing.T) {
	serveTypeScriptV2LLMMediated(t, "--sdk", "mcp-go")
}

func serveTypeScriptV2LLMMediated(t *testing.T, args ...string) {
	nodeClient(t)
	srv := startServe(t, nil, args...)
	steps := []tsStep{
		{Tool: "subscribe_newsletter", Relay: &tsAnswer{Action: "accept", Content: map[string]any{"confirm": true}}},
		{Tool: "register_attendee", Relay: &tsAnswer{Action: "decline"}},
		{Tool: "subscribe_newsletter", Relay: &tsAnswer{Action: "accept", Content: map[string]any{"confirm": "sure"}}},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			rep, _ := runTS(t, &tsPlan{SDK: "v2", Version: version, Transport: "http", URL: srv.mcpURL(),
				Capabilities: map[string]any{}, Steps: steps})
			if len(rep.Steps) != len(steps) {
				t.Fatalf("%d steps reported, want %d", len(rep.Steps), len(steps))
			}
			for i, want := range []struct {
				text  string
				isErr bool
			}{{"Subscribed.", false}, {"Registration declined.", false}, {"/confirm", true}} {
				s := rep.Steps[i]
				if len(s.Elicitations) != 0 || len(s.Results) != 2 || s.Results[1].Result == nil {
					t.Fatalf("step %d (%s): elicitations %+v, results %+v: want the question in the result and the answer's result", i, s.Tool, s.Elicitations, s.Results)
				}
				var got strings.Builder
				for _, c := range s.Results[1].Result.Content {
					got.WriteString(c.Text)
				}
				if !strings.Contains(got.String(), want.text) || s.Results[1].Result.IsError != want.isErr || strings.Contains(got.String(), "sure") {
					t.Errorf("step %d (%s): got %q (error %v), want %q (error %v)", i, s.Tool, got.String(), s.Results[1].Result.IsError, want.text, want.isErr)
				}
			}
		})
	}
}

// TestServeTypeScriptStdio drives `serve --stdio` with the TypeScript SDK's
// client, which starts it; the pages of URL mode are still served over
// HTTP.
func TestServeTypeScriptStdio(t *testing.T) { serveTypeScriptStdio(t) }

// TestServeSDKMCPGoTypeScriptStdio: the same on serve --stdio --sdk mcp-go.
func TestServeSDKMCPGoTypeScriptStdio(t *testing.T) { serveTypeScriptStdio(t, "--sdk", "mcp-go") }

func serveTypeScriptStdio(t *testing.T, args ...string) {
	nodeClient(t)
	rep, stderr := runTS(t, &tsPlan{
		Transport: "stdio",
		Command:   servebin.Path(t),
		Args:      append([]string{"serve", "--stdio", "--addr", "127.0.0.1:0", "--conformance"}, args...),
		Env:       map[string]string{"MCP_ELICITATION_SECRET": serveSecret, "MCP_ELICITATION_SECRET_PREVIOUS": ""},
		Steps:     tsSteps,
	})
	checkTS(t, rep, "2025-11-25")
	if !strings.Contains(stderr, "elicitvault: serve: MCP on stdio") {
		t.Errorf("serve --stdio did not say where it serves its pages: %s", stderr)
	}
	if strings.Contains(stderr, serveSecret) || strings.Contains(stderr, "ev1.") || strings.Contains(stderr, "ev2.") {
		t.Errorf("stderr holds a secret or a token: %s", stderr)
	}
}

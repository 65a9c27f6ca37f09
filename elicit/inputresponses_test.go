package elicit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The malformed inputResponses of a 2026-07-28 call and the error each must
// get: -32602 naming what is wrong.
var malformedInputResponses = []struct {
	name, responses, want string
}{
	{"a number", `{"user_name":12345}`, `inputResponses["user_name"]`},
	{"no kind", `{"a":{"action":"accept"},"b":{"nothing":1}}`, `inputResponses["b"]`},
	{"a string", `{"user_name":"yes"}`, `inputResponses["user_name"]`},
	{"not an object", `[1,2]`, `inputResponses is not an object`},
	{"content not an object", `{"user_name":{"action":"accept","content":"s3cret-answer"}}`, `inputResponses["user_name"]`},
}

// quotes reports whether an error message quotes what the client sent
// besides the key (the go-sdk's own decoding error quotes all the params,
// answers included).
func quotes(msg string) bool {
	return strings.Contains(msg, "s3cret") || strings.Contains(msg, "_meta") || strings.Contains(msg, "12345")
}

func meta2026() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    elicit.ProtocolInputRequests,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}
}

func rawCall(id int, responses string) []byte {
	return rawCallKey(id, "inputResponses", responses)
}

// rawCallKey is rawCall with the key of the input responses spelled as
// key (JSON escapes decode to the same key).
func rawCallKey(id int, key, responses string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{},"%s":%s,"_meta":%s}}`,
		id, key, responses, must(json.Marshal(meta2026())))
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func askServer(t *testing.T) (*env, *atomic.Int32) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		ok, err := elicit.Confirm(ctx, "go on?", elicit.WithInputKey("user_name"))
		return fmt.Sprint(ok), err
	})
	return e, &runs
}

type wireResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Over Streamable HTTP, where the go-sdk would answer -32020 (its header
// check cannot read the params) before any middleware.
func TestMalformedInputResponsesHTTP(t *testing.T) {
	for _, via := range []string{"CheckInputResponses", "Handler"} {
		t.Run(via, func(t *testing.T) { malformedHTTP(t, via) })
	}
}

func malformedHTTP(t *testing.T, via string) {
	e, runs := askServer(t)
	var h http.Handler
	if via == "Handler" {
		h = e.ev.Handler(e.server, nil)
	} else {
		h = elicit.CheckInputResponses(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server },
			&mcp.StreamableHTTPOptions{Stateless: true}))
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body []byte) (int, wireResponse) {
		t.Helper()
		status, b := fronttest.Post(t, srv.URL+elicit.MCPPath, "ask", body)
		var w wireResponse
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return status, w
	}
	for _, tc := range malformedInputResponses {
		status, w := post(rawCall(1, tc.responses))
		if status != http.StatusBadRequest || w.Error == nil || w.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(w.Error.Message, tc.want) || quotes(w.Error.Message) {
			t.Errorf("%s: HTTP %d %+v, want 400 and -32602 naming %s", tc.name, status, w.Error, tc.want)
		}
	}
	// The key spelled with a JSON escape is the same key: checked too.
	escaped := rawCallKey(1, "inputRespons\\u0065s", `{"user_name":12345}`)
	if status, w := post(escaped); status != http.StatusBadRequest || w.Error == nil || w.Error.Code != jsonrpc.CodeInvalidParams || quotes(w.Error.Message) {
		t.Errorf("escaped key: HTTP %d %+v, want 400 and -32602", status, w.Error)
	}
	// Well-formed ones pass: null, and an answer of the right shape
	// (without the requestState the question is asked).
	for _, ok := range []string{`null`, `{"user_name":{"action":"accept","content":{"confirm":true}}}`} {
		status, w := post(rawCall(2, ok))
		if status != http.StatusOK || w.Error != nil || !strings.Contains(string(w.Result), "input_required") {
			t.Errorf("%s: HTTP %d %+v %s", ok, status, w.Error, w.Result)
		}
	}
	if runs.Load() != 2 {
		t.Errorf("the handler ran %d times, want 2", runs.Load())
	}
}

// Over stdio (any mcp.Transport), where the go-sdk's own -32602 quotes the
// whole params, answers included.
func TestMalformedInputResponsesTransport(t *testing.T) {
	e, runs := askServer(t)
	s := e.server
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, elicit.CheckTransport(&mcp.IOTransport{Reader: inR, Writer: outW})) }()
	defer func() {
		cancel()
		inW.Close()
		<-done
	}()
	lines := bufio.NewScanner(outR)
	for i, tc := range malformedInputResponses {
		if _, err := inW.Write(append(rawCall(10+i, tc.responses), '\n')); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatal(lines.Err())
		}
		var w wireResponse
		if err := json.Unmarshal(lines.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		if w.Error == nil || w.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(w.Error.Message, tc.want) || quotes(w.Error.Message) {
			t.Errorf("%s: %s, want -32602 naming %s", tc.name, lines.Bytes(), tc.want)
		}
	}
	if _, err := inW.Write(append(rawCall(20, `null`), '\n')); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || !strings.Contains(lines.Text(), "input_required") {
		t.Errorf("well-formed: %s", lines.Text())
	}
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want 1", runs.Load())
	}
}

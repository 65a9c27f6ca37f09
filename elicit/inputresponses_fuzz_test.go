package elicit_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzInputResponses posts a tools/call whose inputResponses is arbitrary
// to elicit.CheckInputResponses: it never panics; it lets through exactly
// what the go-sdk decodes (and what it cannot read, for it to refuse);
// what it refuses is a 400 with the JSON-RPC error -32602 that quotes no
// more than a key.
func FuzzInputResponses(f *testing.F) {
	for _, s := range []string{
		`null`, `{}`, `{"user_name":12345}`, `[1]`, `"x"`,
		`{"a":{"action":"accept","content":{"name":"Alice"}}}`,
		`{"a":{"action":"accept","content":"s"}}`,
		`{"r":{"roots":[{"uri":"file:///x"}]}}`, `{"r":{"roots":7}}`,
		`{"m":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`,
		`{"a":{"nothing":1},"b":{"action":"decline"}}`, `{"\u0000":{}}`,
		`{}, "InputResponses":5`, `5, "inputResponses":{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var passed bool
		h := elicit.CheckInputResponses(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { passed = true }))
		body := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","inputResponses":`), data...)
		body = append(body, "}}"...)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body)))

		// What the go-sdk reads of the same body.
		msg, err := jsonrpc.DecodeMessage(body)
		var p struct {
			InputResponses mcp.InputResponseMap `json:"inputResponses"`
		}
		if err != nil {
			if !passed {
				t.Fatalf("refused what the go-sdk cannot read: %s", rec.Body)
			}
			return
		}
		// The go-sdk matches field names exactly: so does this decoder.
		dec := json.NewDecoder(bytes.NewReader(msg.(*jsonrpc.Request).Params))
		var params map[string]json.RawMessage
		sdkErr := dec.Decode(&params)
		if raw, ok := params["inputResponses"]; sdkErr == nil && ok {
			sdkErr = json.Unmarshal(append(append([]byte(`{"inputResponses":`), raw...), '}'), &p)
		}
		if passed != (sdkErr == nil) {
			t.Fatalf("passed %v, go-sdk decoding error %v, for %q", passed, sdkErr, data)
		}
		if passed {
			return
		}
		var reply struct {
			Error struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &reply) != nil || reply.Error.Code != -32602 {
			t.Fatalf("refused with %d %s", rec.Code, rec.Body)
		}
		if !strings.HasPrefix(reply.Error.Message, "elicit: invalid params: inputResponses") {
			t.Fatalf("message %q", reply.Error.Message)
		}
	})
}

package fronttest

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Post sends body, a 2026-07-28 tools/call of the tool name written by
// the test, to url as is, and returns the response's status and its last
// JSON-RPC message (the last event of an event stream).
func Post(t testing.TB, url, name string, body []byte) (status int, msg []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msg, _ = io.ReadAll(res.Body)
	if i := bytes.LastIndex(msg, []byte("data: ")); i >= 0 { // an event stream
		msg = msg[i+len("data: "):]
	}
	return res.StatusCode, bytes.TrimSpace(msg)
}

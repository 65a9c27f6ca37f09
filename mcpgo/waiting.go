package mcpgo

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// A URL-mode round of 2026-07-28 whose page is not done after
// elicit.Config.URLRoundWait answers "still waiting": an input-required
// result whose inputRequests is empty, {}, with a new requestState, which
// the client sends back at once. mcp-go (v1.2.1) drops an empty
// inputRequests when it encodes a CallToolResult (omitempty), and a
// client reads an input-required result without it as final: the go-sdk
// client returned it to its caller as an empty tool result, and the
// user's answer, given later on the page, was never used. So the
// front-end puts the empty map back on the way out, in every message of
// its transports (Handler, ServeStdio): an input-required result of
// elicitvault's (its requestState is "ev1." or "ev2.") without
// inputRequests gets "inputRequests": {}. Nothing else is touched.

// restoreWaiting returns msg, one JSON-RPC message (a line of stdio, a
// JSON response, or an SSE event whose data line is the message), with
// the inputRequests of a "still waiting" result put back, and whether it
// changed it.
func restoreWaiting(msg []byte) ([]byte, bool) {
	// Most messages are not input-required results; those that ask
	// something carry inputRequests.
	if !bytes.Contains(msg, []byte(`"input_required"`)) || bytes.Contains(msg, []byte(`"inputRequests"`)) {
		return msg, false
	}
	lines := bytes.Split(msg, []byte("\n"))
	changed := false
	for i, line := range lines {
		prefix, body := []byte(nil), line
		if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			prefix, body = []byte("data: "), rest
		}
		if fixed, ok := restoreResult(body); ok {
			lines[i] = append(prefix, fixed...)
			changed = true
		}
	}
	if !changed {
		return msg, false
	}
	return bytes.Join(lines, []byte("\n")), true
}

// restoreResult returns the JSON-RPC response body with "inputRequests":
// {} added to its result, when that result is an input-required result
// of elicitvault's without input requests.
func restoreResult(body []byte) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return nil, false
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(msg["result"], &res) != nil {
		return nil, false
	}
	var kind, state string
	if json.Unmarshal(res["resultType"], &kind) != nil || kind != "input_required" || res["inputRequests"] != nil ||
		json.Unmarshal(res["requestState"], &state) != nil || !ours(state) {
		return nil, false
	}
	res["inputRequests"] = json.RawMessage("{}")
	var err error
	if msg["result"], err = marshal(res); err != nil {
		return nil, false
	}
	out, err := marshal(msg)
	if err != nil {
		return nil, false
	}
	return out, true
}

// marshal is json.Marshal without HTML escaping and the trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// waitingWriter restores the "still waiting" results in what mcp-go
// writes to w, which takes a message per Write (mcp-go's stdio server and
// its Streamable HTTP server write so).
type waitingWriter struct {
	w io.Writer
}

func (ww waitingWriter) Write(p []byte) (int, error) {
	if q, ok := restoreWaiting(p); ok {
		if _, err := ww.w.Write(q); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return ww.w.Write(p)
}

// restoreWaitingHTTP is next, mcp-go's Streamable HTTP server, with the
// "still waiting" results of its responses restored, JSON and SSE alike.
func restoreWaitingHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := waitingResponse{ResponseWriter: w, body: waitingWriter{w}}
		if _, ok := w.(http.Flusher); ok {
			// mcp-go streams (SSE) only through a writer that flushes.
			next.ServeHTTP(flushingResponse{rw}, r)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

type waitingResponse struct {
	http.ResponseWriter
	body waitingWriter
}

func (w waitingResponse) Write(p []byte) (int, error) { return w.body.Write(p) }

// Unwrap is for http.ResponseController.
func (w waitingResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type flushingResponse struct{ waitingResponse }

func (w flushingResponse) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

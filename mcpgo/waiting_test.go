package mcpgo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newRounds returns a front-end whose tool "connect" asks for a URL-mode
// elicitation and returns the action, with URL-mode rounds of roundWait
// and the pages on a server of their own.
func newRounds(t *testing.T, roundWait time.Duration) *Server {
	t.Helper()
	ev := fronttest.NewPagedElicitor(t, &elicit.Config{URLRoundWait: roundWait})
	m := server.NewMCPServer("rounds", "1")
	f := New(ev, m, nil)
	m.AddTool(mcp.NewTool("connect"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := elicit.URL(ctx, "Connect your account")
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(a)), nil
	})
	return f
}

// urlCall is a 2026-07-28 tools/call of "connect" from a client with URL
// mode.
func urlCall(state string, responses map[string]json.RawMessage) []byte {
	var msg map[string]any
	json.Unmarshal(modernCall("connect", `{}`, state, responses), &msg)
	meta := msg["params"].(map[string]any)["_meta"].(map[string]any)
	meta[mcp.MetaKeyClientCapabilities] = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	b, _ := json.Marshal(msg)
	return b
}

// linkOf is the URL of r's one input request.
func linkOf(t *testing.T, r *reply) (key, link string) {
	t.Helper()
	key = r.key(t)
	var req struct {
		Params struct {
			URL string `json:"url"`
		} `json:"params"`
	}
	if err := json.Unmarshal(r.Result.InputRequests[key], &req); err != nil || req.Params.URL == "" {
		t.Fatalf("input request %s: %v", r.Result.InputRequests[key], err)
	}
	return key, req.Params.URL
}

// stillWaiting fails the test unless r is a "still waiting" result: input
// required, an empty (present) inputRequests, a requestState other than
// before.
func stillWaiting(t *testing.T, r *reply, before string) {
	t.Helper()
	if r.Result == nil || r.Result.ResultType != "input_required" || r.Result.InputRequests == nil ||
		len(r.Result.InputRequests) != 0 || !ours(r.Result.RequestState) || r.Result.RequestState == before {
		t.Fatalf("got %s, want input_required with inputRequests {} and a new requestState", describe(r))
	}
}

// describe is what a test says of r: its kind, input requests, and
// whether it carries a requestState (not the state itself).
func describe(r *reply) string {
	if r.Result == nil {
		return fmt.Sprintf("error %d", r.code())
	}
	return fmt.Sprintf("resultType %q, inputRequests %v (nil: %v), requestState %v",
		r.Result.ResultType, len(r.Result.InputRequests), r.Result.InputRequests == nil, r.Result.RequestState != "")
}

// finish answers link's page with Accept while the client keeps retrying
// from state, and checks the call's result.
func finish(t *testing.T, send func([]byte) []byte, state, link string) {
	t.Helper()
	go func() {
		if resp, err := http.PostForm(link, url.Values{"action": {"accept"}}); err == nil {
			resp.Body.Close()
		}
	}()
	for range 20 {
		body := send(urlCall(state, map[string]json.RawMessage{}))
		var r struct {
			Result struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
				Content      []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("response %q: %v", body, err)
		}
		if r.Result.ResultType == "input_required" {
			state = r.Result.RequestState
			continue
		}
		if len(r.Result.Content) != 1 || r.Result.Content[0].Text != "accept" {
			t.Fatalf("got %s, want accept", body)
		}
		return
	}
	t.Fatal("still waiting after 20 rounds")
}

// A URL-mode round of 2026-07-28 whose page is not done answers "still
// waiting" after the round wait, with inputRequests {} on the wire (mcp-go
// drops the empty map), over Streamable HTTP and stdio; the answer given
// afterwards is taken by a later round.
func TestStillWaitingOnTheWire(t *testing.T) {
	const roundWait = 200 * time.Millisecond
	rounds := func(t *testing.T, send func([]byte) []byte) {
		r := decode(t, send(urlCall("", nil)))
		key, link := linkOf(t, r)
		start := time.Now()
		w := decode(t, send(urlCall(r.Result.RequestState, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept"}`)})))
		if d := time.Since(start); d < roundWait {
			t.Errorf("the round answered after %v, before the round wait", d)
		}
		stillWaiting(t, w, r.Result.RequestState)
		// The client sends the new state back at once: waiting again.
		w2 := decode(t, send(urlCall(w.Result.RequestState, map[string]json.RawMessage{})))
		stillWaiting(t, w2, w.Result.RequestState)
		finish(t, send, w2.Result.RequestState, link)
	}

	t.Run("http", func(t *testing.T) {
		srv := httptest.NewServer(newRounds(t, roundWait).Handler(nil))
		defer srv.Close()
		rounds(t, func(msg []byte) []byte {
			// An event stream ends with the response, after notifications.
			_, body := fronttest.Post(t, srv.URL+elicit.MCPPath, "connect", msg)
			return body
		})
	})

	t.Run("stdio", func(t *testing.T) {
		f := newRounds(t, roundWait)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- f.ServeStdio(t.Context(), inR, outW) }()
		br := bufio.NewReader(outR)
		rounds(t, func(msg []byte) []byte {
			inW.Write(append(msg, '\n'))
			for {
				l, err := br.ReadBytes('\n')
				if err != nil {
					t.Fatal(err)
				}
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal(l, &m) == nil && m.ID != nil { // not a notification
					return l
				}
			}
		})
		inW.Close()
		<-done
	})
}

// Only elicitvault's input-required results without input requests are
// changed; the message keeps its SSE framing.
func TestRestoreWaiting(t *testing.T) {
	for _, tc := range []struct {
		in      string
		changed bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[],"requestState":"ev2.abc","resultType":"input_required"}}` + "\n", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"requestState\":\"ev2.abc\",\"resultType\":\"input_required\"}}\n\n", true},
		{`{"jsonrpc":"2.0","id":1,"result":{"requestState":"theirs","resultType":"input_required"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"a":{}},"requestState":"ev2.abc","resultType":"input_required"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"input_required"}],"resultType":"complete"}}`, false},
	} {
		out, changed := restoreWaiting([]byte(tc.in))
		if changed != tc.changed {
			t.Errorf("%q: changed %v", tc.in, changed)
			continue
		}
		if !changed {
			if string(out) != tc.in {
				t.Errorf("%q became %q", tc.in, out)
			}
			continue
		}
		body := string(out)
		if i := strings.Index(body, "data: "); i >= 0 {
			if !strings.HasPrefix(body, "event: message\ndata: ") || !strings.HasSuffix(body, "}\n\n") {
				t.Errorf("SSE framing lost: %q", body)
			}
			body = body[i+len("data: "):]
		}
		var m struct {
			ID     int `json:"id"`
			Result struct {
				InputRequests map[string]any `json:"inputRequests"`
				RequestState  string         `json:"requestState"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &m); err != nil || m.ID != 1 ||
			m.Result.InputRequests == nil || len(m.Result.InputRequests) != 0 || m.Result.RequestState != "ev2.abc" {
			t.Errorf("%q became %q (%v)", tc.in, out, err)
		}
	}
}

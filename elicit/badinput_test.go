package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Broken or malicious answers get clear errors and leave nothing behind.
func TestBadAnswers(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, tc := range []struct {
			name string
			res  *mcp.ElicitResult
			want error
		}{
			{"unknown action", &mcp.ElicitResult{Action: "maybe"}, elicit.ErrMalformed},
			{"empty action", &mcp.ElicitResult{}, elicit.ErrMalformed},
			{"wrong type", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": []any{1}, "email": "a@b.c"}}, elicit.ErrInvalidContent},
			{"null value", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": nil, "email": "a@b.c"}}, elicit.ErrInvalidContent},
			{"object value", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": map[string]any{}, "email": "a@b.c"}}, elicit.ErrInvalidContent},
			{"oversized", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": strings.Repeat("x", 300), "email": "a@b.c"}}, elicit.ErrTooLarge},
		} {
			e := newEnv(t, &elicit.Config{MaxContentSize: 256})
			var got error
			e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				_, got = elicit.Form[profile](ctx, "Your profile?", withProfile)
				return "", got
			})
			var text string
			if version == legacy {
				cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("cancel", nil)}, version, forge(tc.res))
				text, _ = call(t, cs, "profile")
			} else {
				text, _ = forgeRounds(t, e, "profile", tc.res)
			}
			if !errors.Is(got, tc.want) {
				t.Errorf("%s: got %v (%q), want %v", tc.name, got, text, tc.want)
			}
			if strings.Contains(text, "xxxxxxxx") {
				t.Errorf("%s: error quotes content: %q", tc.name, text)
			}
			e.assertEmpty()
		}
	})
}

// On 2026-07-28, a retry without the response asks again; one with a
// response of the wrong kind is invalid params (-32602) naming the key.
func TestBadInputResponses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		responses func(key string) mcp.InputResponseMap
		askAgain  bool
	}{
		{"missing", func(string) mcp.InputResponseMap { return mcp.InputResponseMap{} }, true},
		{"other key", func(string) mcp.InputResponseMap {
			return mcp.InputResponseMap{"zzz": &mcp.ElicitResult{Action: "accept"}}
		}, true},
		{"wrong kind", func(k string) mcp.InputResponseMap {
			//lint:ignore SA1019 a response of another (deprecated) kind is the point
			return mcp.InputResponseMap{k: &mcp.CreateMessageWithToolsResult{Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}}
		}, false},
	} {
		e := newEnv(t, nil)
		e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			_, err := elicit.Form[profile](ctx, "Your profile?", withProfile)
			return "", err
		})
		m := e.manual()
		first := m.call(&mcp.CallToolParams{Name: "profile"})
		var key string
		for k := range first.InputRequests {
			key = k
		}
		res, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile", RequestState: first.RequestState, InputResponses: tc.responses(key)})
		var we *jsonrpc.Error
		switch {
		case tc.askAgain && (err != nil || !res.NeedsInput()):
			t.Errorf("%s: %+v, %v; want the question again", tc.name, res, err)
		case !tc.askAgain && (!errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, key)):
			t.Errorf("%s: %+v, %v; want -32602 naming %s", tc.name, res, err, key)
		}
		e.assertEmpty()
	}
}

// A resolution for the right elicitation ID but another session or subject
// is refused, and does not disturb the elicitation, which the genuine
// callback then completes.
func TestForeignResolution(t *testing.T) {
	e := newEnv(t, nil)
	elicit.SetTakenWait(e.ev, 100*time.Millisecond) // the answer waits for the client's reply
	srv := e.callback()
	e.tool("connect", urlTool(srv.URL))
	foreign := make(chan error, 2)
	cs := e.connect(&mcp.ClientOptions{
		Capabilities: bothModes,
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			id := req.Params.ElicitationID
			foreign <- elicit.ResolveURL(e.ev, ctx, &token.Claims{Kind: token.URL, SessionID: "l:other", ElicitationID: id}, elicit.Accept)
			foreign <- elicit.ResolveURL(e.ev, ctx, &token.Claims{Kind: token.URL, SessionID: "l:other", Subject: "mallory", ElicitationID: id}, elicit.Accept)
			if s := get(t, req.Params.URL); s != http.StatusOK {
				t.Errorf("genuine callback: %d", s)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, legacy)
	if got, isErr := call(t, cs, "connect"); isErr || got != "accept" {
		t.Fatalf("got %q", got)
	}
	for range 2 {
		if err := <-foreign; !errors.Is(err, elicit.ErrUnknownElicitation) {
			t.Errorf("foreign resolution: %v", err)
		}
	}
	e.assertEmpty()
}

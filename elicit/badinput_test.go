package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/token"
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
				_, got = elicit.Form[profile](ctx, req, "Your profile?", elicit.WithSchema(profileSchema))
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

// On 2026-07-28, a retry without the response, or with a response of the
// wrong kind, is refused.
func TestBadInputResponses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		responses func(key string) mcp.InputResponseMap
	}{
		{"missing", func(string) mcp.InputResponseMap { return mcp.InputResponseMap{} }},
		{"other key", func(string) mcp.InputResponseMap {
			return mcp.InputResponseMap{"zzz": &mcp.ElicitResult{Action: "accept"}}
		}},
		{"wrong kind", func(k string) mcp.InputResponseMap {
			//lint:ignore SA1019 a response of another (deprecated) kind is the point
			return mcp.InputResponseMap{k: &mcp.CreateMessageWithToolsResult{Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}}
		}},
	} {
		e := newEnv(t, nil)
		var got error
		e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			_, got = elicit.Form[profile](ctx, req, "Your profile?", elicit.WithSchema(profileSchema))
			return "", got
		})
		m := e.manual()
		first := m.call(&mcp.CallToolParams{Name: "profile"})
		var key string
		for k := range first.InputRequests {
			key = k
		}
		res := m.call(&mcp.CallToolParams{Name: "profile", RequestState: first.RequestState, InputResponses: tc.responses(key)})
		if !res.IsError || !errors.Is(got, elicit.ErrMalformed) {
			t.Errorf("%s: %q, %v", tc.name, text(res), got)
		}
		e.assertEmpty()
	}
}

// A resolution for the right elicitation ID but another session or subject
// is refused, and does not disturb the elicitation, which the genuine
// callback then completes.
func TestForeignResolution(t *testing.T) {
	e := newEnv(t, nil)
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

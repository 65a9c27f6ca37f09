package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// llmConfig enables the LLM-mediated fallback only.
var llmConfig = &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}}

// mute is a client without the elicitation capability: no handler.
var mute = &mcp.ClientOptions{}

// pending is what a tool call that stopped at an LLM-mediated elicitation
// returned.
type pending struct {
	ID      string
	Message string
	Schema  map[string]any
	Text    string
}

// pendingOf reads the elicitation a tool result hands to the model, or
// fails t.
func pendingOf(t *testing.T, res *mcp.CallToolResult) pending {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error instead of a pending elicitation: %s", text(res))
	}
	raw, ok := res.Meta[elicit.MetaElicitationPending]
	if !ok {
		t.Fatalf("no _meta.%s in %+v (%s)", elicit.MetaElicitationPending, res.Meta, text(res))
	}
	b, _ := json.Marshal(raw)
	var p struct {
		ID      string         `json:"elicitId"` // FrontMCP's name, which sendElicitationResult takes
		OldID   string         `json:"elicitationId"`
		Message string         `json:"message"`
		Schema  map[string]any `json:"requestedSchema"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.ID == "" || p.OldID != p.ID || p.Schema == nil {
		t.Fatalf("elicitationPending %s: %v", b, err)
	}
	return pending{ID: p.ID, Message: p.Message, Schema: p.Schema, Text: text(res)}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// submit calls the fallback tool.
func submit(t *testing.T, cs *mcp.ClientSession, id, action string, content map[string]any) *mcp.CallToolResult {
	t.Helper()
	args := map[string]any{"elicitId": id, "action": action}
	if content != nil {
		args["content"] = content
	}
	return callTool(t, cs, elicit.FallbackTool, args)
}

// counted registers a profile tool that counts its runs.
func (e *env) counted(name string) *atomic.Int32 {
	var runs atomic.Int32
	e.tool(name, func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		return profileTool(ctx, req)
	})
	return &runs
}

// modelProfile registers the LLM-mediated tool "profile" (runs counts its
// runs) and calls it from a client at version that cannot elicit, and
// returns the env, the client and the elicitation handed to the model.
func modelProfile(t *testing.T, version string) (*env, *mcp.ClientSession, pending, *atomic.Int32) {
	t.Helper()
	e := newEnv(t, llmConfig)
	runs := e.counted("profile")
	cs := e.connect(mute, version)
	return e, cs, pendingOf(t, callTool(t, cs, "profile", nil)), runs
}

func TestModelAccept(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e, cs, p, runs := modelProfile(t, version)
		if p.Message != "Your profile?" || p.Schema["type"] != "object" {
			t.Errorf("pending %+v", p)
		}
		for _, want := range []string{"Your profile?", elicit.FallbackTool, p.ID, `"format":"email"`, "Do not answer on their behalf"} {
			if !strings.Contains(p.Text, want) {
				t.Errorf("instructions lack %q:\n%s", want, p.Text)
			}
		}
		res := submit(t, cs, p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com", "tags": []any{"b"}})
		if res.IsError || text(res) != "accept {Name:Ann Email:ann@example.com Age:0 Plan:free Tags:[b]}" {
			t.Fatalf("continued: %q (error %v)", text(res), res.IsError)
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("handler ran %d times, want 2 (the call, its continuation)", n)
		}
		// Used once: a second answer finds nothing.
		if again := submit(t, cs, p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"}); !again.IsError {
			t.Errorf("second answer: %q", text(again))
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("handler ran %d times after a second answer", n)
		}
		e.assertEmpty()
	})
}

// An invalid answer is a tool error naming the JSON path; the elicitation
// stays open and a corrected answer continues the tool.
func TestModelInvalidThenCorrected(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e, cs, p, runs := modelProfile(t, version)
		for _, tc := range invalidProfiles {
			res := submit(t, cs, p.ID, "accept", tc.content)
			if !res.IsError || !strings.Contains(text(res), tc.path) {
				t.Errorf("%v: %q (error %v), want an error at %s", tc.content, text(res), res.IsError, tc.path)
			}
			if strings.Contains(text(res), "nope") || strings.Contains(text(res), "zzz") {
				t.Errorf("error %q quotes the answer", text(res))
			}
		}
		for _, bad := range []map[string]any{
			{"elicitId": p.ID, "action": "maybe"},
			{"elicitId": p.ID, "action": "accept", "content": "Ann"},
			{"action": "accept"},
		} {
			if res := callTool(t, cs, elicit.FallbackTool, bad); !res.IsError {
				t.Errorf("%v: %q", bad, text(res))
			}
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("handler ran %d times before a valid answer", n)
		}
		res := submit(t, cs, p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
		if res.IsError || !strings.HasPrefix(text(res), "accept {Name:Ann") {
			t.Fatalf("corrected: %q (error %v)", text(res), res.IsError)
		}
		e.assertEmpty()
	})
}

// Another session (of the same server, also unable to elicit) cannot
// answer; the owner still can.
func TestModelForeignSession(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		runs := e.counted("profile")
		owner := e.connect(mute, version)
		other := e.connect(mute, version)
		p := pendingOf(t, callTool(t, owner, "profile", nil))
		res := submit(t, other, p.ID, "accept", map[string]any{"name": "Eve", "email": "eve@example.com"})
		if !res.IsError || !strings.Contains(text(res), elicit.ErrUnknownElicitation.Error()) {
			t.Fatalf("foreign session: %q (error %v)", text(res), res.IsError)
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("handler ran %d times", n)
		}
		res = submit(t, owner, p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
		if res.IsError || !strings.HasPrefix(text(res), "accept {Name:Ann") {
			t.Fatalf("owner: %q", text(res))
		}
	})
}

// Concurrent answers: exactly one continues the tool.
func TestModelDoubleSubmission(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e, cs, p, runs := modelProfile(t, version)
		const n = 8
		var wg sync.WaitGroup
		var ok, answered atomic.Int32
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := submit(t, cs, p.ID, "accept", map[string]any{"name": fmt.Sprint("Ann", i), "email": "ann@example.com"})
				switch {
				case !res.IsError:
					ok.Add(1)
				case strings.Contains(text(res), elicit.ErrAnswered.Error()), strings.Contains(text(res), elicit.ErrUnknownElicitation.Error()):
					answered.Add(1)
				default:
					t.Errorf("unexpected: %q", text(res))
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 || answered.Load() != n-1 {
			t.Errorf("%d continued, %d refused; want 1 and %d", ok.Load(), answered.Load(), n-1)
		}
		if got := runs.Load(); got != 2 {
			t.Errorf("handler ran %d times, want 2", got)
		}
		e.assertEmpty()
	})
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// The fallback tool is listed only to clients that cannot elicit in form
// mode, and only when the fallback is enabled; a client that can elicit
// is refused it.
func TestModelToolListedOnlyWhenNeeded(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		e.tool("profile", profileTool)
		urlOnly := &mcp.ClientOptions{ElicitationHandler: answer("decline", nil), Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}}
		for _, tc := range []struct {
			name string
			opts *mcp.ClientOptions
			want bool
		}{
			{"no elicitation", mute, true},
			{"URL mode only", urlOnly, true},
			// For URL-mode elicitations, which the model hands on.
			{"form mode only", &mcp.ClientOptions{ElicitationHandler: answer("decline", nil)}, true},
			{"both modes", &mcp.ClientOptions{ElicitationHandler: answer("decline", nil), Capabilities: bothModes}, false},
		} {
			cs := e.connect(tc.opts, version)
			if got := slices.Contains(toolNames(t, cs), elicit.FallbackTool); got != tc.want {
				t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
			}
			if !tc.want {
				res := submit(t, cs, "anything", "accept", map[string]any{})
				if !res.IsError || !strings.Contains(text(res), "only for clients that cannot elicit") {
					t.Errorf("%s: called it: %q", tc.name, text(res))
				}
			}
		}

		off := newEnv(t, nil)
		off.tool("profile", profileTool)
		if slices.Contains(toolNames(t, off.connect(mute, version)), elicit.FallbackTool) {
			t.Error("listed without the fallback enabled")
		}
	})
}

// Without an applicable fallback the call fails as before: a call may
// allow none, or only one that does not apply.
func TestModelNotApplicable(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		var formErr, urlErr error
		var confirmed bool
		e.tool("strict", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			_, formErr = elicit.Form[profile](ctx, "Your profile?", withProfile, elicit.WithFallbacks())
			confirmed, _ = elicit.Confirm(ctx, "Sure?", elicit.WithFallbacks(elicit.BrowserForm))
			_, urlErr = elicit.URL(ctx, "Connect", elicit.WithLink(elicit.CallbackURL("http://127.0.0.1:1/cb")), elicit.WithFallbacks())
			return "done", nil
		})
		cs := e.connect(mute, version)
		if res := callTool(t, cs, "strict", nil); res.IsError || text(res) != "done" {
			t.Fatalf("%q", text(res))
		}
		if !errors.Is(formErr, elicit.ErrUnsupported) || !errors.Is(urlErr, elicit.ErrUnsupported) || confirmed {
			t.Errorf("form %v, url %v, confirmed %v", formErr, urlErr, confirmed)
		}
		e.assertEmpty()
	})
}

type draft struct {
	ID string `json:"id"`
}

// A handler with two elicitations stops twice; its state carries what it
// did before the first across both continuations.
func TestModelTwoStepsWithState(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		var created atomic.Int32
		mcp.AddTool(e.server, &mcp.Tool{Name: "send"}, func(ctx context.Context, req *mcp.CallToolRequest, in count) (*mcp.CallToolResult, any, error) {
			var d draft
			if ok, err := elicit.LoadState(ctx, &d); err != nil {
				return nil, nil, err
			} else if !ok {
				d.ID = fmt.Sprint("draft-", created.Add(1))
				if err := elicit.SaveState(ctx, d); err != nil {
					return nil, nil, err
				}
			}
			who, err := elicit.Form[profile](ctx, "To whom?", withProfile)
			if err != nil {
				return nil, nil, err
			}
			ok, err := elicit.Confirm(ctx, fmt.Sprintf("Send %s (%d copies) to %s?", d.ID, in.N, who.Content.Name))
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(d.ID, " ", ok)}}}, nil, nil
		})
		cs := e.connect(mute, version)
		p1 := pendingOf(t, callTool(t, cs, "send", map[string]any{"n": 3}))
		p2 := pendingOf(t, submit(t, cs, p1.ID, "accept", map[string]any{"name": "Bo", "email": "bo@example.com"}))
		if p2.Message != "Send draft-1 (3 copies) to Bo?" || p2.ID == p1.ID {
			t.Fatalf("second question %+v", p2)
		}
		res := submit(t, cs, p2.ID, "accept", map[string]any{"confirm": true})
		if res.IsError || text(res) != "draft-1 true" {
			t.Fatalf("final: %q", text(res))
		}
		if n := created.Load(); n != 1 {
			t.Errorf("created %d drafts, want 1", n)
		}
		e.assertEmpty()
	})
}

// A newer elicitation in the session replaces a pending LLM-mediated one.
func TestModelSuperseded(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		e.tool("profile", profileTool)
		cs := e.connect(mute, version)
		old := pendingOf(t, callTool(t, cs, "profile", nil))
		cur := pendingOf(t, callTool(t, cs, "profile", nil))
		if res := submit(t, cs, old.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"}); !res.IsError {
			t.Errorf("old: %q", text(res))
		}
		if res := submit(t, cs, cur.ID, "decline", nil); res.IsError {
			t.Errorf("current: %q", text(res))
		}
		e.assertEmpty()
	})
}

// urlPending reads the URL-mode elicitation a tool result hands to the
// model: its ID and link.
func urlPending(t *testing.T, res *mcp.CallToolResult, base string) (id, link string) {
	t.Helper()
	meta, _ := res.Meta[elicit.MetaElicitationPending].(map[string]any)
	link, _ = meta["url"].(string)
	id, _ = meta["elicitId"].(string)
	if res.IsError || meta["mode"] != "url" || id == "" || meta["elicitId"] != meta["elicitationId"] ||
		!strings.HasPrefix(link, base+"/cb?token=ev2.") || !strings.Contains(text(res), link) {
		t.Fatalf("not a pending URL elicitation: result %q, meta %v", text(res), meta)
	}
	return id, link
}

// URL mode for a client that cannot open pages, with the LLM-mediated
// fallback: the model gets the link in the tool result (and the ID under
// elicitId in _meta), the user answers on the page, and the model's
// sendElicitationResult with that ID continues the tool with the page's
// answer. The model cannot accept for the user; the ID and link are never
// reusable.
func TestURLViaModel(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, choice := range []string{"accept", "decline"} {
			e := newEnv(t, llmConfig)
			srv := e.callback()
			runs := 0
			e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				runs++
				a, err := elicit.URL(ctx, "Connect your account", elicit.WithLink(elicit.CallbackURL(srv.URL+"/cb")))
				return string(a), err
			})
			cs := e.connect(mute, version)
			res := callTool(t, cs, "connect", nil)
			id, link := urlPending(t, res, srv.URL)
			if !strings.Contains(text(res), id) || !strings.Contains(text(res), elicit.FallbackTool) {
				t.Fatalf("the model is not told how to answer: %q", text(res))
			}
			// Before the user answers on the page, the model cannot accept.
			if r := submit(t, cs, id, "accept", nil); !r.IsError || !strings.Contains(text(r), "not answered on the page") {
				t.Fatalf("accept before the page: %q", text(r))
			}
			resp, err := http.PostForm(link, url.Values{"action": {choice}})
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("page: %v %v", resp, err)
			}
			resp.Body.Close()
			// The page decides, whatever the model says.
			if got := submit(t, cs, id, "accept", nil); got.IsError || text(got) != choice {
				t.Fatalf("after %s: %q", choice, text(got))
			}
			if runs != 2 {
				t.Errorf("%d runs, want 2", runs)
			}
			// Used up: the ID continues nothing more (a resend of the same
			// answer gets its result again), and calling the tool again
			// asks again.
			if r := submit(t, cs, id, "decline", nil); !r.IsError && r.Meta[elicit.MetaElicitationReplayed] != true || runs != 2 {
				t.Fatalf("a second answer: %q (%d runs)", text(r), runs)
			}
			urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
		}
	})
}

// The model may refuse for the user (they will not open the page): the
// tool continues with the refusal and the link is dead.
func TestURLViaModelRefused(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		srv := e.callback()
		e.tool("connect", urlTool(srv.URL))
		cs := e.connect(mute, version)
		id, link := urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
		if got := submit(t, cs, id, "decline", nil); got.IsError || text(got) != "decline" {
			t.Fatalf("decline: %q", text(got))
		}
		if s := get(t, link); s != http.StatusGone {
			t.Fatalf("the link after the refusal: %d, want 410", s)
		}
		e.assertEmpty()
	})
}

// Issue 20, item 12: a leftover link never pre-answers a later call. Two
// calls give two links before the user opens either; opening them
// answers no other call of the tool: the next calls get links of their
// own, and an answer reaches only sendElicitationResult with its own ID.
func TestURLViaModelLeftoverLink(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		srv := e.callback()
		e.tool("connect", urlTool(srv.URL))
		cs := e.connect(mute, version)
		_, link1 := urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
		id2, link2 := urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
		// On a session, the second call replaced the first (410); either
		// way link 1 answers no later call.
		if s := get(t, link1); s != http.StatusOK && s != http.StatusGone {
			t.Fatalf("link 1: %d", s)
		}
		id3, _ := urlPending(t, callTool(t, cs, "connect", nil), srv.URL) // call 3 is asked, not answered
		if id3 == id2 {
			t.Fatal("call 3 was handed call 2's elicitation")
		}
		get(t, link2)
		urlPending(t, callTool(t, cs, "connect", nil), srv.URL) // call 4 too
	})
}

// A client with form mode but not URL mode, and a handler that asks for a
// page and then a form: the link goes to the model, and the form that
// follows in the continuation is asked too (natively on 2025-11-25; on
// 2026-07-28, where a continuation cannot stop for input requests, through
// the model), and its answer accepted.
func TestURLViaModelThenForm(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		srv := e.callback()
		e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			if a, err := elicit.URL(ctx, "Connect your account", elicit.WithLink(elicit.CallbackURL(srv.URL+"/cb"))); err != nil || a != elicit.Accept {
				return string(a), err
			}
			return profileTool(ctx, req)
		})
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("accept", map[string]any{"name": "Ann", "email": "ann@example.com"})}, version)
		id, link := urlPending(t, callTool(t, cs, "connect", nil), srv.URL)
		if s := get(t, link); s != http.StatusOK {
			t.Fatalf("page: %d", s)
		}
		res := submit(t, cs, id, "accept", nil)
		if version != legacy {
			p := pendingOf(t, res)
			res = submit(t, cs, p.ID, "accept", map[string]any{"name": "Ann", "email": "ann@example.com"})
		}
		if res.IsError || !strings.HasPrefix(text(res), "accept {Name:Ann") {
			t.Fatalf("got %q", text(res))
		}
		e.assertEmpty()
	})
}

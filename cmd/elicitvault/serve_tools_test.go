package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// newTestReference returns the reference server, with the conformance
// fixtures, and the pages of URL mode on an httptest server.
func newTestReference(t *testing.T, ttl time.Duration) (r *reference, base string) {
	t.Helper()
	return newTestReferenceWith(t, &referenceOptions{TTL: ttl, Conformance: true})
}

// newTestReferenceWith is newTestReference with options (BaseURL is set).
func newTestReferenceWith(t *testing.T, o *referenceOptions) (r *reference, base string) {
	t.Helper()
	k, err := keyring.New([]byte("serve tools test secret, 32 bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	o.BaseURL = hs.URL
	r, err = newReference(k, st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ev.Close() })
	mux.Handle(elicit.PagesPrefix, r.ev.Pages(nil))
	return r, hs.URL
}

// endpoints are the MCP endpoints of the tests' reference servers, each
// built once: elicit's Handler installs middleware on the server.
var endpoints sync.Map // *reference → http.Handler

// endpoint is the MCP endpoint of r, for elicittest.
func endpoint(r *reference) http.Handler {
	if h, ok := endpoints.Load(r); ok {
		return h.(http.Handler)
	}
	h, _ := endpoints.LoadOrStore(r, r.handler())
	return h.(http.Handler)
}

// expect runs a tool at both protocol versions and checks its text.
func expect(t *testing.T, r *reference, tool string, args any, want string, script ...elicittest.Step) []*elicittest.Run {
	t.Helper()
	runs := elicittest.Call(t, endpoint(r), tool, args, script...)
	for _, run := range runs {
		if run.Err != nil || run.Text() != want {
			t.Errorf("%s at %s: got %q (error %v), want %q", tool, run.Protocol, run.Text(), run.Err, want)
		}
	}
	return runs
}

// Every tool of the reference server, answered each way a user can, on
// both protocol paths.
func TestServeTools(t *testing.T) {
	r, base := newTestReference(t, 0)
	yes := elicittest.Accept(map[string]any{"confirm": true})
	no := elicittest.Accept(map[string]any{"confirm": false})

	t.Run("delete_contacts", func(t *testing.T) {
		runs := expect(t, r, "delete_contacts", map[string]any{"count": 3}, "Deleted 3 contacts.", yes)
		for _, run := range runs {
			if len(run.Asked) != 1 || run.Asked[0].Message != "Delete 3 contacts? This cannot be undone." || run.Asked[0].Mode != "form" {
				t.Errorf("%s: asked %+v", run.Protocol, run.Asked)
			}
		}
		expect(t, r, "delete_contacts", nil, "Nothing was deleted.", no)
		expect(t, r, "delete_contacts", nil, "Nothing was deleted.", elicittest.Decline())
		expect(t, r, "delete_contacts", nil, "Nothing was deleted.", elicittest.Cancel())
	})
	t.Run("subscribe_newsletter", func(t *testing.T) {
		expect(t, r, "subscribe_newsletter", nil, "Subscribed.", yes)
		expect(t, r, "subscribe_newsletter", nil, "Not subscribed.", elicittest.Decline())
		expect(t, r, "subscribe_newsletter", nil, "Not subscribed.", elicittest.Cancel())
	})
	t.Run("register_attendee", func(t *testing.T) {
		ada := map[string]any{"name": "Ada", "email": "ada@example.com", "arrival": "2026-05-04",
			"guests": 2, "workshops": []any{"go", "oauth"}}
		for _, run := range elicittest.Call(t, endpoint(r), "register_attendee", nil, elicittest.Accept(ada)) {
			out, ok := strings.CutPrefix(run.Text(), "Registered: ")
			var got map[string]any
			if !ok || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("%s: got %q", run.Protocol, run.Text())
			}
			// The defaults of what was left out are filled in.
			if got["name"] != "Ada" || got["guests"] != 2.0 || got["room"] != "single" || got["budget"] != 49.5 {
				t.Errorf("%s: registered %v", run.Protocol, got)
			}
			props, _ := run.Asked[0].Schema["properties"].(map[string]any)
			if len(props) != 13 {
				t.Errorf("%s: the form has %d fields, want 13", run.Protocol, len(props))
			}
		}
		expect(t, r, "register_attendee", nil, "Registration declined.", elicittest.Decline())
		expect(t, r, "register_attendee", nil, "Registration cancelled.", elicittest.Cancel())
		// An answer the server refuses: the tool fails naming the field,
		// without the value.
		bad := map[string]any{"name": "Ada", "email": "not an address", "arrival": "2026-05-04"}
		for _, run := range elicittest.Call(t, endpoint(r), "register_attendee", nil, elicittest.Accept(bad)) {
			if !run.IsError() || !strings.Contains(run.Text(), "/email") || strings.Contains(run.Text(), "not an address") {
				t.Errorf("%s: got %q (error result %v)", run.Protocol, run.Text(), run.IsError())
			}
		}
	})
	t.Run("connect_account", func(t *testing.T) {
		// The consent page names the server and says what is accepted.
		look := func(ctx context.Context, link string) error {
			resp, err := http.Get(link)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if page := string(b); !strings.Contains(page, "<h1>elicitvault reference server asks you to confirm</h1>") ||
				!strings.Contains(page, "<blockquote>Connect your Example account to elicitvault") {
				t.Errorf("the consent page does not say who asks for what:\n%s", page)
			}
			return elicittest.Visit(ctx, link)
		}
		runs := expect(t, r, "connect_account", nil, "Your Example account is connected.", elicittest.OpenURL(look))
		for _, run := range runs {
			q := run.Asked[0]
			if q.Mode != "url" || !strings.HasPrefix(q.URL, base+elicit.PagesPrefix+"consent"+"?token=") || q.ElicitationID == "" {
				t.Errorf("%s: asked %+v", run.Protocol, q)
			}
		}
		expect(t, r, "connect_account", nil, "Not connected: you declined.", elicittest.Decline())
		expect(t, r, "connect_account", nil, "Not connected: cancelled.", elicittest.Cancel())
		// Agreeing to open the link but never completing the page.
		stall := elicittest.OpenURL(func(context.Context, string) error { return nil })
		rs, _ := newTestReference(t, time.Second)
		run := elicittest.CallAt(t, endpoint(rs), "2025-11-25", "connect_account", nil, stall)
		if !run.IsError() || !strings.Contains(run.Text(), "time limit") {
			t.Errorf("an unfinished page: got %q (error result %v), want a timeout", run.Text(), run.IsError())
		}
	})
	t.Run("conformance tools", func(t *testing.T) {
		expect(t, r, "test_elicitation", map[string]any{"message": "Who?"},
			`User response: action=accept, content={"email":"ada@example.com","username":"ada"}`,
			elicittest.Accept(map[string]any{"username": "ada", "email": "ada@example.com"}))
		expect(t, r, "test_elicitation_sep1034_defaults", nil,
			`Elicitation completed: action=accept, content={"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`,
			elicittest.Accept(map[string]any{}))
		expect(t, r, "test_elicitation_sep1330_enums", nil,
			`Elicitation completed: action=decline, content={}`, elicittest.Decline())
	})
	t.Run("never answered", func(t *testing.T) {
		rs, _ := newTestReference(t, 500*time.Millisecond)
		run := elicittest.CallAt(t, endpoint(rs), "2025-11-25", "subscribe_newsletter", nil, elicittest.Never(10*time.Second))
		if !run.IsError() || !strings.Contains(run.Text(), "time limit") {
			t.Errorf("got %q (error result %v, %v), want the server's timeout", run.Text(), run.IsError(), run.Err)
		}
		run = elicittest.CallAt(t, endpoint(rs), "2026-07-28", "subscribe_newsletter", nil, elicittest.Never(100*time.Millisecond))
		if run.Err == nil {
			t.Errorf("got %q, want the client's error", run.Text())
		}
	})
}

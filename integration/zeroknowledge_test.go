package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/elicitvault/elicitvault/keyring"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
)

// The known values of the zero-knowledge test. None may ever reach a
// backend in any form.
const (
	zkSessionForm = "zk-session-form-8e21c7"
	zkSubjectForm = "zk-subject-ann@example.org"
	zkSessionURL  = "zk-session-url-d94b03"
	zkSubjectURL  = "zk-subject-bob@example.org"
	zkMessageForm = "zk-message: which colours for the 4f8d order?"
	zkMessageURL  = "zk-message: connect the 9b1e account"
	zkField       = "zkfield_favourite_colour_q7"
	zkAnswer      = "zk-answer-teal-and-amber-5c2e"

	// Sealed directly and tokens issued directly.
	zkSessionSealed = "zk-session-sealed-61fa0e"
	zkSubjectSealed = "zk-subject-cyd@example.org"
	zkRecordSealed  = "zk-elicitation-sealed-2b7d"
	zkContentSealed = "zk-content-sealed-iban-DE89370400440532013000"
	zkToolName      = "zk-tool-transfer-funds"
	zkState         = "zk-request-state-payload-0a93"
	zkVerifier      = "zk-code-verifier-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"

	// A task (the tasks extension) that asks, over Streamable HTTP on
	// 2026-07-28.
	zkSubjectTask = "zk-subject-dee@example.org"
	zkMessageTask = "zk-message: which colour for the task 7c3a?"
	zkAnswerTask  = "zk-answer-task-vermilion-e04f"
)

// zkForm is the form of the test: its field name is a known value.
type zkForm struct {
	Colour string `json:"zkfield_favourite_colour_q7"`
}

// TestZeroKnowledge drives the real flow over each backend — a form and a
// URL-mode elicitation in flight for two authenticated users in sessions
// with known IDs, tokens of every kind issued and consumed, records sealed
// for known bindings — and checks, while the elicitations are pending and
// after they are resolved, that neither the backend's keys, values and
// channel names nor anything the store and the server sent each other
// hold a session ID, subject, elicitation ID, message, field name, answer,
// token or token ID, in any encoding.
func TestZeroKnowledge(t *testing.T) {
	zkBackends(t, func(t *testing.T, b *zkBackend) {
		ctx := t.Context()
		keys, err := ring.New([]byte(secretA), nil)
		if err != nil {
			t.Fatal(err)
		}
		forbidden := &forbiddenValues{values: []string{
			zkSessionForm, zkSubjectForm, zkSessionURL, zkSubjectURL,
			zkMessageForm, zkMessageURL, zkField, zkAnswer,
			zkSessionSealed, zkSubjectSealed, zkRecordSealed, zkContentSealed,
			zkToolName, zkState, zkVerifier,
			zkSubjectTask, zkMessageTask, zkAnswerTask,
		}}
		forbid, snapshot := forbidden.add, forbidden.snapshot

		// The server: an Elicitor over the backend, whose hook learns
		// every elicitation ID.
		ev, err := elicit.New((*keyring.Keyring)(keys), b.Store, &elicit.Config{Hooks: []elicit.Hooks{{
			BeforeRequest: func(_ context.Context, r *elicit.Request) error {
				forbid(r.ID)
				return nil
			},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		// The browser is signed in as the user the link was issued to.
		callback := httptest.NewServer(ev.Pages(func(*http.Request) (string, bool) { return zkSubjectURL, true }))
		defer callback.Close()
		server := mcp.NewServer(&mcp.Implementation{Name: "zk", Version: "1"}, nil)
		ev.Install(server)
		addTextTool(server, "profile", func(ctx context.Context) (string, error) {
			res, err := elicit.Form[zkForm](ctx, zkMessageForm)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %s", res.Action, res.Content.Colour), nil
		})
		addTextTool(server, "connect", func(ctx context.Context) (string, error) {
			a, err := elicit.URL(ctx, zkMessageURL, elicit.WithLink(callbackLink(callback.URL+"/cb")))
			if err != nil {
				return "", err
			}
			return string(a), nil
		})

		// Records sealed for a known binding, and tokens of every kind
		// issued for known claims and consumed.
		sealed := envelope.Binding{Purpose: "elicit/result", Subject: zkSubjectSealed, SessionID: zkSessionSealed, RecordID: zkRecordSealed}
		content := fmt.Appendf(nil, `{"action":"accept","content":{%q:%q}}`, zkField, zkContentSealed)
		rec, err := keys.SealRecord(sealed, content, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Store.Put(ctx, keys.StoreKey(sealed), rec, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		tokens, err := token.NewService(keys, b.Store)
		if err != nil {
			t.Fatal(err)
		}
		args, err := token.HashArgs(fmt.Appendf(nil, `{%q:%q}`, zkField, zkAnswer))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*token.Claims{
			{Kind: token.URL, SessionID: zkSessionSealed, Subject: zkSubjectSealed, ElicitationID: zkRecordSealed},
			{Kind: token.OAuthState, SessionID: zkSessionSealed, Subject: zkSubjectSealed, ElicitationID: zkRecordSealed, CodeVerifier: zkVerifier},
			{Kind: token.RequestState, SessionID: zkSessionSealed, Subject: zkSubjectSealed, ElicitationID: zkRecordSealed, Tool: zkToolName, ArgsHash: args, State: []byte(zkState)},
		} {
			for _, format := range []token.Format{token.Compact, token.JWE} {
				cc := *c
				tok, err := tokens.Issue(&cc, time.Hour, format)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tokens.Consume(ctx, tok, token.Expect{Kind: c.Kind, SessionID: c.SessionID, Subject: c.Subject})
				if err != nil {
					t.Fatalf("consuming a %s token: %v", c.Kind, err)
				}
				if _, err := tokens.Consume(ctx, tok, token.Expect{Kind: c.Kind}); !errors.Is(err, token.ErrReplayed) {
					t.Fatalf("consuming a %s token again: %v, want ErrReplayed", c.Kind, err)
				}
				forbid(tok, string(got.ID[:]))
			}
		}

		// Two users, each in a session of known ID: one answers a form,
		// the other is sent to a page.
		formAsked := make(chan struct{})
		formRelease := make(chan struct{})
		var releaseOnce sync.Once
		release := func() { releaseOnce.Do(func() { close(formRelease) }) }
		// A check that fails before the release must not leave the form's
		// client waiting: the sessions' cleanup would wait for it.
		t.Cleanup(release)
		formClient := connectAs(t, server, zkSessionForm, zkSubjectForm, &mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				close(formAsked)
				select {
				case <-formRelease:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{zkField: zkAnswer}}, nil
			},
		})
		urlSent := make(chan *mcp.ElicitParams, 1)
		urlClient := connectAs(t, server, zkSessionURL, zkSubjectURL, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				urlSent <- req.Params
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		type outcome struct {
			text string
			err  error
		}
		formDone, urlDone := make(chan outcome, 1), make(chan outcome, 1)
		go func() { s, err := callTool(formClient, "profile"); formDone <- outcome{s, err} }()
		go func() { s, err := callTool(urlClient, "connect"); urlDone <- outcome{s, err} }()

		var sent *mcp.ElicitParams
		select {
		case sent = <-urlSent:
		case <-time.After(10 * time.Second):
			t.Fatal("the URL elicitation was not sent")
		}
		select {
		case <-formAsked:
		case <-time.After(10 * time.Second):
			t.Fatal("the form elicitation was not sent")
		}
		u, err := url.Parse(sent.URL)
		if err != nil {
			t.Fatal(err)
		}
		callbackToken := u.Query().Get(token.DefaultParam)
		claims, err := tokens.Verify(callbackToken, token.Expect{Kind: token.URL})
		if err != nil {
			t.Fatalf("the callback token: %v", err)
		}
		if claims.SessionID != engine.TransportSession(zkSessionURL) || claims.Subject != zkSubjectURL {
			t.Fatalf("the flow bound its token to session %q, subject %q; want the known ones", claims.SessionID, claims.Subject)
		}
		forbid(sent.ElicitationID, callbackToken, string(claims.ID[:]))

		// Both pending: the pending records, the session records and the
		// URL waiter's channel are in the backend. (A blocking form keeps
		// its session's pending elicitation in the process and listens on
		// no channel: its answer comes back to the node that asked.)
		if n := len(b.Dump(t)); n < 5 {
			t.Fatalf("pending: the dump holds %d items; the flow wrote nothing?", n)
		}
		if n := b.Channels(t); n != -1 && n < 1 {
			t.Fatalf("pending: %d channels listened on, want the URL waiter's", n)
		}
		b.CheckNoLeaks(t, "pending", snapshot())

		// Resolve both: the form's answer comes back from the client, the
		// URL elicitation's through its callback.
		release()
		resp, err := http.PostForm(sent.URL, url.Values{"action": {"accept"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("callback: status %d", resp.StatusCode)
		}
		for _, want := range []struct {
			done chan outcome
			text string
		}{{formDone, "accept " + zkAnswer}, {urlDone, "accept"}} {
			select {
			case o := <-want.done:
				if o.err != nil || o.text != want.text {
					t.Fatalf("tool result %q, %v; want %q", o.text, o.err, want.text)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a tool call did not return")
			}
		}
		// What stays: the one-shot markers and the directly sealed record.
		b.CheckNoLeaks(t, "resolved", snapshot())
		// A task whose handler asks: its input request, while pending,
		// and its answer and result, once answered, are in the backend.
		addTask(t, ev, server, "task_profile", askColour(zkMessageTask, ""))
		// The same task on the mcp-go front-end (module mcpgo), over the
		// same Elicitor.
		mcpgoURL := mcpgoTaskNode(t, ev, askColour(zkMessageTask, ""))
		for _, node := range []struct{ sdk, url, tool string }{
			{"go-sdk", zkTaskServer(t, ev, server), "task_profile"},
			{"mcp-go", mcpgoURL, "profile"},
		} {
			result := zkTaskRound(t, node.url, node.url, node.tool, zkAnswerTask, func(id string) {
				forbid(id)
				b.CheckNoLeaks(t, node.sdk+" task pending", snapshot())
			})
			if !strings.Contains(result, "accept "+zkAnswerTask) {
				t.Fatalf("%s: task result %v", node.sdk, result)
			}
			b.CheckNoLeaks(t, node.sdk+" task completed", snapshot())
		}

		// The recording saw the subscriptions and publications, channel
		// names included: it is plaintext, and complete.
		if !wireHolds(b, "SUBSCRIBE", "LISTEN") || !wireHolds(b, "PUBLISH", "pg_notify") {
			t.Fatal("the wire recording holds no subscription or publication; is the connection encrypted?")
		}
	})
}

// zkTaskServer serves server over Streamable HTTP with elicit's Handler;
// every request is authenticated as zkSubjectTask.
func zkTaskServer(t *testing.T, ev *elicit.Elicitor, server *mcp.Server) string {
	t.Helper()
	bearer := auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: zkSubjectTask, Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)
	srv := httptest.NewServer(ev.Handler(server, &elicit.HandlerOptions{MCP: bearer}))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath
}

// zkRPC sends a request on 2026-07-28 with the tasks extension declared
// and returns its result.
func zkRPC(t *testing.T, mcpURL, method string, params map[string]any) map[string]any {
	t.Helper()
	res, rerr := fronttest.Call(t, mcpURL, "zk", method, params, zkTaskCaps)
	if rerr != nil {
		t.Fatalf("%s: %+v", method, rerr)
	}
	return res
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// callTool calls a tool and returns its text, or an error for a tool error.
// callLater calls the tool name in the background, and sends its text,
// or "error: " and the error, on the channel it returns.
func callLater(cs *mcp.ClientSession, name string) <-chan string {
	done := make(chan string, 1)
	go func() {
		s, err := callTool(cs, name)
		if err != nil {
			s = "error: " + err.Error()
		}
		done <- s
	}()
	return done
}

// nextLink returns the next link sent on links, or fails t after 30s.
func nextLink(t *testing.T, links <-chan string) string {
	t.Helper()
	return fronttest.Recv(t, links, "a URL-mode elicitation")
}

func callTool(cs *mcp.ClientSession, name string) (string, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New(fronttest.Text(res))
	}
	return fronttest.Text(res), nil
}

// wireHolds reports whether the store's traffic contains any of words,
// whatever their case, as plaintext traffic does.
func wireHolds(b *zkBackend, words ...string) bool {
	for _, s := range b.wire.streams() {
		for _, w := range words {
			if bytes.Contains(bytes.ToLower(s.data), bytes.ToLower([]byte(w))) {
				return true
			}
		}
	}
	return false
}

// connectAs connects a client to server over in-memory transports at
// protocol 2025-11-25, where the server's side of the session has ID
// session and every request arrives authenticated as subject, as they
// would over Streamable HTTP with a verified bearer token.
func connectAs(t *testing.T, server *mcp.Server, session, subject string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), &authenticated{st, session, subject}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "zk-client", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %s, want 2025-11-25", v)
	}
	return cs
}

// authenticated is a server transport whose connections have a session ID
// and mark every request as coming from an authenticated user.
type authenticated struct {
	mcp.Transport
	session, subject string
}

func (a *authenticated) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &authConn{c, a.session, a.subject}, nil
}

type authConn struct {
	mcp.Connection
	session, subject string
}

func (c *authConn) SessionID() string { return c.session }

func (c *authConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok {
		req.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: c.subject, Expiration: time.Now().Add(time.Hour)}}
	}
	return m, err
}

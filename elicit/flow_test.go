package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/keyring"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	legacy = "2025-11-25"
	mrtr   = "" // the go-sdk's default, 2026-07-28
)

type profile struct {
	Name  string   `json:"name"`
	Email string   `json:"email"`
	Age   int      `json:"age,omitempty"`
	Plan  string   `json:"plan,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func profileSchema(s *jsonschema.Schema) error {
	s.Properties["email"].Format = "email"
	s.Properties["age"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["plan"].Enum = []any{"free", "pro"}
	s.Properties["plan"].Default = json.RawMessage(`"free"`)
	s.Properties["tags"].Items.Enum = []any{"a", "b"}
	return nil
}

// withProfile asks for a profile with profileSchema.
var withProfile = elicit.WithSchema(mustRing(elicit.SchemaFor[profile](profileSchema)))

// env is a server with an Elicitor over a memory store.
type env struct {
	t      *testing.T
	store  store.Store
	keys   *ring.Keyring
	ev     *elicit.Elicitor
	server *mcp.Server
}

func newKeyring(t testing.TB) *ring.Keyring {
	k, err := ring.New([]byte("elicit test secret, thirty-two bytes long"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newEnv(t *testing.T, cfg *elicit.Config) *env {
	t.Helper()
	return newEnvWithKeys(t, cfg, newKeyring(t))
}

// newEnvWithKeys is newEnv with the given keyring (a test clock's).
func newEnvWithKeys(t *testing.T, cfg *elicit.Config, keys *ring.Keyring) *env {
	t.Helper()
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	return newEnvOn(t, st, cfg, keys)
}

// newEnvOn is newEnvWithKeys on st.
func newEnvOn(t *testing.T, st store.Store, cfg *elicit.Config, keys *ring.Keyring) *env {
	t.Helper()
	ev, err := elicit.New((*keyring.Keyring)(keys), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ev.Install(s)
	return &env{t: t, store: st, keys: keys, ev: ev, server: s}
}

// tool registers a tool whose handler is h and whose result is the text h
// returns.
func (e *env) tool(name string, h func(ctx context.Context, req *mcp.CallToolRequest) (string, error)) {
	mcp.AddTool(e.server, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		text, err := h(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
}

// connect connects a client with the given options at protocol version
// (the go-sdk's default when empty).
func (e *env) connect(opts *mcp.ClientOptions, version string, mw ...mcp.Middleware) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.server.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts)
	c.AddReceivingMiddleware(mw...)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	if version != "" && cs.InitializeResult().ProtocolVersion != version {
		e.t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, version)
	}
	return cs
}

// call calls a tool and returns its text, or the text of its error.
func call(t *testing.T, cs *mcp.ClientSession, name string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	return text(res), res.IsError
}

// assertEmpty checks that nothing of the flow is left in the store.
func (e *env) assertEmpty() {
	e.t.Helper()
	// Cleanup runs after the handler returns; give it a moment.
	deadline := time.Now().Add(2 * time.Second)
	for {
		entries, _, err := e.store.Scan(context.Background(), "", 100)
		if err != nil {
			e.t.Fatal(err)
		}
		var left []store.Entry
		for _, en := range entries {
			if oneshot.IsMarker(en.Value) || en.Key == epoch.Key {
				continue // a one-shot marker, which must outlive its token or answer; the store's epoch
			}
			left = append(left, en)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d entries left in the store", len(left))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forge makes the client answer every elicitation/create with res, past the
// go-sdk client's own checks: what a broken or malicious client sends.
func forge(res *mcp.ElicitResult) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "elicitation/create" {
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

func answer(action string, content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}
}

func profileTool(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
	res, err := elicit.Form[profile](ctx, "Your profile?", withProfile)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %+v", res.Action, res.Content), nil
}

func forBoth(t *testing.T, f func(t *testing.T, version string)) {
	t.Run("2025-11-25", func(t *testing.T) { f(t, legacy) })
	t.Run("2026-07-28", func(t *testing.T) { f(t, mrtr) })
}

func TestFormAccept(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		e.tool("profile", profileTool)
		var seen *mcp.ElicitParams
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			seen = req.Params
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann", "email": "ann@example.com", "age": 30, "tags": []any{"b"}}}, nil
		}}, version)
		got, isErr := call(t, cs, "profile")
		if isErr || got != "accept {Name:Ann Email:ann@example.com Age:30 Plan:free Tags:[b]}" {
			t.Fatalf("got %q (error %v)", got, isErr)
		}
		if seen == nil || seen.Mode != "form" || seen.Message != "Your profile?" {
			t.Fatalf("client saw %+v", seen)
		}
		schema, _ := json.Marshal(seen.RequestedSchema)
		if !strings.Contains(string(schema), `"format":"email"`) || !strings.Contains(string(schema), `"required":["name","email"]`) {
			t.Errorf("schema sent: %s", schema)
		}
		e.assertEmpty()
	})
}

// answerVia registers h as the tool name, calls it from a client that
// answers action with content, in the client's own form or, viaModel,
// through the model (the LLM-mediated fallback), and returns the env and
// the tool's text and whether it is an error.
func answerVia(t *testing.T, version string, viaModel bool, name string, h func(context.Context, *mcp.CallToolRequest) (string, error), action string, content map[string]any) (*env, string, bool) {
	t.Helper()
	if !viaModel {
		e := newEnv(t, nil)
		e.tool(name, h)
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer(action, content)}, version)
		got, isErr := call(t, cs, name)
		return e, got, isErr
	}
	e := newEnv(t, llmConfig)
	e.tool(name, h)
	cs := e.connect(mute, version)
	p := pendingOf(t, callTool(t, cs, name, nil))
	res := submit(t, cs, p.ID, action, content)
	return e, text(res), res.IsError
}

// A decline or cancel, in the client's form or through the model, reaches
// the tool without content: content that comes with a refusal is dropped.
func TestDeclineCancel(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, action := range []string{"decline", "cancel"} {
			for _, viaModel := range []bool{false, true} {
				e, got, isErr := answerVia(t, version, viaModel, "profile", profileTool, action, map[string]any{"name": "x"})
				if isErr || got != action+" {Name: Email: Age:0 Plan: Tags:[]}" {
					t.Errorf("%s (via the model %v): got %q (error %v)", action, viaModel, got, isErr)
				}
				e.assertEmpty()
			}
		}
	})
}

// invalidProfiles are answers to profileTool's form that its schema
// refuses, each with the JSON path of what is wrong. "nope" and "zzz" must
// not be quoted back.
var invalidProfiles = []struct {
	content map[string]any
	path    string
}{
	{map[string]any{"name": "Ann", "email": "nope"}, "/email"},
	{map[string]any{"name": "Ann"}, "/email"},
	{map[string]any{"name": 7, "email": "a@b.c"}, "/name"},
	{map[string]any{"name": "Ann", "email": "a@b.c", "age": -1}, "/age"},
	{map[string]any{"name": "Ann", "email": "a@b.c", "tags": []any{"zzz"}}, "/tags/0"},
	{map[string]any{"name": "Ann", "email": "a@b.c", "admin": true}, "/admin"},
}

func TestFormInvalidContent(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, tc := range invalidProfiles {
			e := newEnv(t, nil)
			var got error
			e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				_, err := elicit.Form[profile](ctx, "Your profile?", withProfile)
				got = err
				return "", err
			})
			forged := &mcp.ElicitResult{Action: "accept", Content: tc.content}
			var text string
			var isErr bool
			if version == legacy {
				cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("accept", nil)}, version, forge(forged))
				text, isErr = call(t, cs, "profile")
			} else {
				text, isErr = forgeRounds(t, e, "profile", forged)
			}
			var ce *elicit.ContentError
			if !isErr || !errors.As(got, &ce) || ce.Path != tc.path || !errors.Is(got, elicit.ErrInvalidContent) {
				t.Errorf("%v: got %v (%q), want a ContentError at %s", tc.content, got, text, tc.path)
			}
			if strings.Contains(text, "nope") || strings.Contains(text, "zzz") {
				t.Errorf("error text %q quotes content", text)
			}
			e.assertEmpty()
		}
	})
}

// Confirm is true only on an explicit accept with the box set, in the
// client's form or through the model.
func TestConfirm(t *testing.T) {
	confirm := func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		ok, err := elicit.Confirm(ctx, "Delete 47 contacts?")
		return fmt.Sprint(ok), err
	}
	forBoth(t, func(t *testing.T, version string) {
		for _, tc := range []struct {
			action  string
			content map[string]any
			want    bool
		}{
			{"accept", map[string]any{"confirm": true}, true},
			{"accept", map[string]any{"confirm": false}, false},
			{"decline", map[string]any{"confirm": true}, false},
			{"cancel", nil, false},
		} {
			for _, viaModel := range []bool{false, true} {
				_, got, isErr := answerVia(t, version, viaModel, "delete", confirm, tc.action, tc.content)
				if isErr || got != fmt.Sprint(tc.want) {
					t.Errorf("%s %v (via the model %v): got %q (error %v), want %v", tc.action, tc.content, viaModel, got, isErr, tc.want)
				}
			}
		}
	})
}

func TestCapabilityMissing(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		for _, opts := range []*mcp.ClientOptions{
			{}, // no elicitation at all
			{ElicitationHandler: answer("accept", nil), Capabilities: &mcp.ClientCapabilities{
				Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}}, // URL only
		} {
			e := newEnv(t, nil)
			var formErr, confirmErr error
			var confirmed bool
			e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
				_, formErr = elicit.Form[profile](ctx, "Your profile?", withProfile)
				confirmed, confirmErr = elicit.Confirm(ctx, "Sure?")
				return "done", nil
			})
			asked := false
			if opts.ElicitationHandler != nil {
				opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = true
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
			}
			cs := e.connect(opts, version)
			call(t, cs, "profile")
			var ue *elicit.UnsupportedError
			if !errors.As(formErr, &ue) || ue.Mode != elicit.ModeForm || !errors.Is(formErr, elicit.ErrUnsupported) {
				t.Errorf("Form: %v, want an UnsupportedError for form", formErr)
			}
			if confirmed || !errors.Is(confirmErr, elicit.ErrUnsupported) {
				t.Errorf("Confirm: %v %v, want false and ErrUnsupported", confirmed, confirmErr)
			}
			if asked {
				t.Error("the client was sent a mode it does not support")
			}
			e.assertEmpty()
		}
	})
}

func TestSchemaRefusedAtCallSite(t *testing.T) {
	e := newEnv(t, nil)
	type login struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	var errs []error
	e.tool("login", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Form[login](ctx, "Log in")
		errs = append(errs, err)
		_, err = elicit.Form[struct {
			Where map[string]string `json:"where"`
		}](ctx, "Where?")
		errs = append(errs, err)
		return "", nil
	})
	asked := false
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = true
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}, legacy)
	call(t, cs, "login")
	var se *elicit.SchemaError
	if !errors.As(errs[0], &se) || se.Field != "password" || !errors.Is(errs[0], elicit.ErrSensitiveField) {
		t.Errorf("sensitive field: %v", errs[0])
	}
	if !errors.As(errs[1], &se) || se.Field != "where" || !errors.Is(errs[1], elicit.ErrInvalidParams) {
		t.Errorf("nested field: %v", errs[1])
	}
	if asked {
		t.Error("a refused form was sent")
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: 150 * time.Millisecond})
	var got error
	e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, got = elicit.Form[profile](ctx, "Your profile?", withProfile)
		return "", got
	})
	cancelled := make(chan struct{})
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done() // the server cancels the request at the TTL
		close(cancelled)
		return nil, ctx.Err()
	}}, legacy)
	start := time.Now()
	call(t, cs, "profile")
	if !errors.Is(got, elicit.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %v", d)
	}
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Error("the client's request was not cancelled")
	}
	e.assertEmpty()
}

func TestOnePendingPerSession(t *testing.T) {
	e := newEnv(t, nil)
	var mu sync.Mutex
	results := map[string]error{}
	e.tool("first", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Form[profile](ctx, "first", withProfile)
		mu.Lock()
		results["first"] = err
		mu.Unlock()
		return "first done", err
	})
	e.tool("second", profileTool)
	firstAsked := make(chan struct{})
	firstCancelled := make(chan struct{})
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req.Params.Message == "first" {
			close(firstAsked)
			<-ctx.Done()
			close(firstCancelled)
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo", "email": "bo@example.com"}}, nil
	}}, legacy)

	firstDone := make(chan string)
	go func() {
		text, _ := call(t, cs, "first")
		firstDone <- text
	}()
	<-firstAsked
	got, isErr := call(t, cs, "second")
	if isErr || !strings.HasPrefix(got, "accept {Name:Bo") {
		t.Fatalf("second: %q", got)
	}
	select {
	case <-firstDone:
	case <-time.After(3 * time.Second):
		t.Fatal("the first elicitation was not cancelled")
	}
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(results["first"], elicit.ErrReplaced) {
		t.Errorf("first: %v, want ErrCancelled", results["first"])
	}
	select {
	case <-firstCancelled:
	case <-time.After(2 * time.Second):
		t.Error("the first request was not cancelled at the client")
	}
	e.assertEmpty()

	// Another session is not affected by this one's elicitations.
	cs2 := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("accept", map[string]any{"name": "Cy", "email": "cy@example.com"})}, legacy)
	if got, _ := call(t, cs2, "second"); !strings.HasPrefix(got, "accept {Name:Cy") {
		t.Errorf("other session: %q", got)
	}
}

// forgeRounds calls a tool on 2026-07-28 with the go-sdk's automatic rounds
// off, and answers its input request with res, past the client's checks.
func forgeRounds(t *testing.T, e *env, name string, res *mcp.ElicitResult) (string, bool) {
	t.Helper()
	cs := e.connect(&mcp.ClientOptions{
		ElicitationHandler: answer("cancel", nil),
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}, mrtr)
	ctx := context.Background()
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("first round: %+v", first)
	}
	responses := mcp.InputResponseMap{}
	for k := range first.InputRequests {
		responses[k] = res
	}
	second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, InputResponses: responses, RequestState: first.RequestState})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	return text(second), second.IsError
}

func TestHooksOrder(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		var mu sync.Mutex
		var trace []string
		log := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
		mk := func(n string) elicit.Hooks {
			return elicit.Hooks{
				BeforeRequest: func(context.Context, *elicit.Request) error { log(n + ".beforeRequest"); return nil },
				AroundRequest: func(ctx context.Context, r *elicit.Request, next elicit.RequestFunc) (*elicit.Response, error) {
					log(n + ".aroundRequest")
					return next(ctx, r)
				},
				AfterRequest: func(context.Context, *elicit.Request, *elicit.Response, error) { log(n + ".afterRequest") },
				BeforeResult: func(context.Context, *elicit.Request, *elicit.Response) error { log(n + ".beforeResult"); return nil },
				AroundResult: func(ctx context.Context, r *elicit.Request, raw *elicit.Response, next elicit.ResultFunc) (*elicit.Response, error) {
					log(n + ".aroundResult")
					return next(ctx, r, raw)
				},
				AfterResult: func(context.Context, *elicit.Request, *elicit.Response, error) { log(n + ".afterResult") },
			}
		}
		e := newEnv(t, &elicit.Config{Hooks: []elicit.Hooks{mk("a"), mk("b")}})
		e.tool("profile", profileTool)
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: answer("decline", nil)}, version)
		call(t, cs, "profile")
		want := "a.beforeRequest a.aroundRequest b.beforeRequest b.aroundRequest b.afterRequest a.afterRequest " +
			"a.beforeResult a.aroundResult b.beforeResult b.aroundResult b.afterResult a.afterResult"
		if version == mrtr {
			// The first round stops in the request flow.
			want = "a.beforeRequest a.aroundRequest b.beforeRequest b.aroundRequest b.afterRequest a.afterRequest " + want
		}
		if got := strings.Join(trace, " "); got != want {
			t.Errorf("trace:\n%s\nwant:\n%s", got, want)
		}
	})

	// A BeforeRequest error aborts: nothing is sent.
	e := newEnv(t, &elicit.Config{Hooks: []elicit.Hooks{{BeforeRequest: func(context.Context, *elicit.Request) error {
		return errors.New("policy: no elicitation from this tool")
	}}}})
	var got error
	e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, got = elicit.Form[profile](ctx, "Your profile?", withProfile)
		return "", got
	})
	asked := false
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = true
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}, legacy)
	call(t, cs, "profile")
	if got == nil || !strings.Contains(got.Error(), "policy") || asked {
		t.Errorf("got %v, asked %v", got, asked)
	}
	e.assertEmpty()
}

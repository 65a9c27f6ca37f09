package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// fakePeer is a tool call of no SDK.
type fakePeer struct {
	info    CallInfo
	mu      sync.Mutex
	watched int
	ended   func()
}

func (p *fakePeer) Call() *CallInfo { return &p.info }
func (p *fakePeer) Elicit(context.Context, *ElicitParams) (*Reply, error) {
	return nil, errors.New("fakePeer: no client")
}
func (p *fakePeer) NotifyComplete(context.Context, string)      {}
func (p *fakePeer) Progress(context.Context, float64, string)   {}
func (p *fakePeer) Log(context.Context, string, string, string) {}
func (p *fakePeer) WatchEnd(ended func())                       { p.mu.Lock(); p.watched++; p.ended = ended; p.mu.Unlock() }
func (p *fakePeer) endSession()                                 { p.mu.Lock(); f := p.ended; p.mu.Unlock(); f() }

type prepared struct{}

func newFrontendEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	keys, err := ring.New([]byte("engine test secret of thirty-two bytes!!"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limits = Limits{Max: 10, PerClient: 10, MaxBytes: 1 << 20, PerClientBytes: 1 << 20}
	cfg.MaxPendingSize, cfg.MaxContentSize = 1<<20, 1<<16
	cfg.Prepare = func(ctx context.Context) context.Context { return context.WithValue(ctx, prepared{}, true) }
	e, err := New(keys, memory.New(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestBeginFinish runs the rounds of a 2026-07-28 tool call through the
// operations a front-end calls, with no SDK: the handler's context
// carries the call and the preparation; its elicitation stops the run
// (ErrInputRequired), which Finish turns into an input request with a
// sealed requestState; the retry with that state and the client's answer
// gets the answer; the call is tracked until Finish; the same state sent
// again is refused before the handler runs.
func TestBeginFinish(t *testing.T) {
	e := newFrontendEngine(t, Config{})
	p := &fakePeer{info: CallInfo{Who: Identity{Subject: "alice", Session: Sessionless}, Tool: "t",
		Arguments: json.RawMessage(`{"a":1}`), Protocol: ProtocolInputRequests, FormMode: true}}
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	handler := func(ctx context.Context) (*Response, error) {
		return e.Deliver(ctx, &Ask{ID: RandomID(), Mode: ModeForm, Message: "Name?", Schema: schema, TTL: time.Minute, Key: "name"})
	}

	ctx, run, err := e.Begin(context.Background(), p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if PeerFrom(ctx) != p || ctx.Value(prepared{}) == nil {
		t.Fatal("the handler's context lacks the call or the preparation")
	}
	_, herr := handler(ctx)
	if !errors.Is(herr, ErrInputRequired) {
		t.Fatalf("the first run's elicitation = %v, want ErrInputRequired", herr)
	}
	stop, err := run.Finish(ctx, herr)
	if err != nil || stop == nil || stop.InputRequests["name"] == nil || stop.RequestState == "" {
		t.Fatalf("Finish = %+v, %v; want an input request and a requestState", stop, err)
	}
	if ctx.Err() == nil {
		t.Error("the call's context outlives Finish")
	}

	answer := map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	ctx, run, err = e.Begin(context.Background(), p, stop.RequestState, answer)
	if err != nil {
		t.Fatal(err)
	}
	res, herr := handler(ctx)
	if herr != nil || res.Action != Accept || res.Content["name"] != "Ada" {
		t.Fatalf("the retry's elicitation = %+v, %v; want the answer", res, herr)
	}
	if stop, err := run.Finish(ctx, nil); stop != nil || err != nil {
		t.Fatalf("Finish after the answer = %+v, %v; want the handler's result", stop, err)
	}

	_, _, err = e.Begin(context.Background(), p, stop.RequestState, answer)
	if !errors.Is(err, ErrBadState) {
		t.Fatalf("the requestState replayed: Begin = %v, want ErrBadState", err)
	}
}

// TestCloseEndsCalls holds that Close ends the calls in progress with
// ErrClosed, waits for them, and refuses new ones; and that EndCalls ends
// only the calls of one identity.
func TestCloseEndsCalls(t *testing.T) {
	e := newFrontendEngine(t, Config{})
	a := &fakePeer{info: CallInfo{Who: Identity{Subject: "alice", Session: "s:a"}}}
	b := &fakePeer{info: CallInfo{Who: Identity{Subject: "bob", Session: "s:b"}}}
	actx, arun, err := e.Begin(context.Background(), a, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	bctx, brun, err := e.Begin(context.Background(), b, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("session ended")
	e.EndCalls(a.info.Who, cause)
	if context.Cause(actx) != cause || bctx.Err() != nil {
		t.Fatalf("EndCalls: alice's cause %v, bob's err %v", context.Cause(actx), bctx.Err())
	}
	arun.End(actx)

	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	<-bctx.Done()
	if !errors.Is(context.Cause(bctx), ErrClosed) {
		t.Fatalf("Close ended the call with %v", context.Cause(bctx))
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the call did")
	case <-time.After(50 * time.Millisecond):
	}
	brun.Finish(bctx, nil)
	<-closed
	if _, _, err := e.Begin(context.Background(), a, "", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after Close = %v", err)
	}
}

// TestBeginRefused holds that a call refused before its handler runs (a
// requestState that does not verify) is not left tracked: Close does not
// wait for it.
func TestBeginRefused(t *testing.T) {
	e := newFrontendEngine(t, Config{})
	p := &fakePeer{info: CallInfo{Who: Identity{Session: Sessionless}, Tool: "t", Protocol: ProtocolInputRequests}}
	_, _, err := e.Begin(context.Background(), p, "ev2.forged", nil)
	var ip *InvalidParamsError
	if !errors.As(err, &ip) || !errors.Is(err, ErrBadState) {
		t.Fatalf("Begin = %v, want an *InvalidParamsError matching ErrBadState", err)
	}
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a refused call")
	}
}

func TestListsFallbackTool(t *testing.T) {
	for _, c := range []struct {
		llm, form, url, want bool
	}{
		{false, false, false, false},
		{true, true, true, false},
		{true, true, false, true},
		{true, false, true, true},
		{true, false, false, true},
	} {
		var cfg Config
		if c.llm {
			cfg.Fallbacks = []string{FallbackLLM}
		}
		e := newFrontendEngine(t, cfg)
		if got := e.ListsFallbackTool(c.form, c.url); got != c.want {
			t.Errorf("LLM-mediated %v, form %v, url %v: %v, want %v", c.llm, c.form, c.url, got, c.want)
		}
	}
}

func TestOwnsState(t *testing.T) {
	for s, want := range map[string]bool{"": true, "ev2.abc": true, "ev1.abc": true, "eyJhbGciOi": false, "other": false} {
		if OwnsState(s) != want {
			t.Errorf("OwnsState(%q) = %v", s, !want)
		}
	}
}

// TestLeaveFor holds that a session's end, learnt through its Peer,
// deletes what the session left pending.
func TestLeaveFor(t *testing.T) {
	e := newFrontendEngine(t, Config{})
	ctx := context.Background()
	p := &fakePeer{info: CallInfo{Who: Identity{Session: "s:left"}}}
	s := e.Slot(p.info.Who, "id1", e.Now().Add(time.Minute))
	if err := s.PutPending(ctx, []byte(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	e.LeaveFor(p, s)
	if p.watched != 1 {
		t.Fatalf("WatchEnd called %d times", p.watched)
	}
	var v json.RawMessage
	if err := s.Get(ctx, PurposePending, &v); err != nil {
		t.Fatalf("before the end: %v", err)
	}
	p.endSession()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := s.Get(ctx, PurposePending, &v); errors.Is(err, ErrUnknownElicitation) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's end left its elicitation pending")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A call without a session leaves nothing to watch.
	q := &fakePeer{info: CallInfo{Who: Identity{Subject: "u", Session: Sessionless}}}
	e.LeaveFor(q, e.Slot(q.info.Who, "id2", e.Now().Add(time.Minute)))
	if q.watched != 0 {
		t.Fatal("a sessionless call was watched")
	}
}

// TestAnswerContinues runs the LLM-mediated fallback through the engine
// alone: a client without form mode gets the question handed to the model
// (a Stop with Pending), the model's answer through Answer continues the
// tool, whose elicitation now returns the answer, and the same answer sent
// again gets the kept result, marked as replayed, without running the
// tool again; an answer of another subject is refused.
func TestAnswerContinues(t *testing.T) {
	e := newFrontendEngine(t, Config{Fallbacks: []string{FallbackLLM}})
	who := Identity{Subject: "alice", Session: TransportSession("one")}
	p := &fakePeer{info: CallInfo{Who: who, Tool: "t", Arguments: json.RawMessage(`{"a":1}`), Protocol: "2025-11-25"}}
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	runs := 0
	handler := func(ctx context.Context) (*Response, error) {
		runs++
		return e.Deliver(ctx, &Ask{ID: RandomID(), Mode: ModeForm, Message: "Name?", Schema: schema, TTL: time.Minute})
	}

	ctx, run, err := e.Begin(context.Background(), p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, herr := handler(ctx)
	stop, err := run.Finish(ctx, herr)
	if err != nil || stop == nil || stop.Pending == nil {
		t.Fatalf("Finish = %+v, %v; want the question handed to the model", stop, err)
	}
	pending, _ := stop.Pending.Meta[MetaElicitationPending].(map[string]any)
	id, _ := pending["elicitId"].(string)
	if id == "" {
		t.Fatalf("no elicitId in %v", stop.Pending.Meta)
	}

	answer := func(who Identity) (*Answer, *Response, error) {
		args := json.RawMessage(`{"elicitId":"` + id + `","action":"accept","content":{"name":"Ada"}}`)
		q := &fakePeer{info: CallInfo{Who: who, Tool: FallbackTool, Arguments: args, Protocol: "2025-11-25"}}
		var got *Response
		ans, err := e.Answer(context.Background(), q, func(ctx context.Context, tool string, args json.RawMessage) error {
			if tool != "t" || string(args) != `{"a":1}` {
				t.Errorf("continued %s %s, want the original call", tool, args)
			}
			res, err := handler(ctx)
			got = res
			return err
		})
		return ans, got, err
	}
	if ans, _, err := answer(Identity{Subject: "mallory", Session: who.Session}); err != nil || ans.ToolError == "" {
		t.Fatalf("another subject's answer = %+v, %v; want a tool error", ans, err)
	}
	ans, got, err := answer(who)
	if err != nil || ans.ToolError != "" || ans.Stop != nil || got == nil || got.Content["name"] != "Ada" {
		t.Fatalf("Answer = %+v, %+v, %v; want the tool continued with the answer", ans, got, err)
	}
	ans.Keep(context.Background(), map[string]any{"content": []any{}})
	runsBefore := runs
	again, _, err := answer(who)
	if err != nil || again.Replayed == nil || runs != runsBefore {
		t.Fatalf("the same answer again = %+v, %v (runs %d → %d); want the kept result, the tool not run", again, err, runsBefore, runs)
	}
	var replayed struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(again.Replayed, &replayed) != nil || replayed.Meta[MetaElicitationReplayed] != true {
		t.Fatalf("the kept result %s is not marked as replayed", again.Replayed)
	}
}

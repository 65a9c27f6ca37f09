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

// fakeFlow records what the engine asks of package elicit's part.
type fakeFlow struct {
	noEnder
	opened  []string // the requestStates Open saw
	settled int
	stop    *Stop
	causes  []error
	llm     bool
	openErr error
}

type prepared struct{}

func (f *fakeFlow) Prepare(ctx context.Context) context.Context {
	return context.WithValue(ctx, prepared{}, true)
}

func (f *fakeFlow) Open(_ context.Context, p Peer, state string, _ map[string]json.RawMessage) (Round, error) {
	if f.openErr != nil {
		return nil, f.openErr
	}
	f.opened = append(f.opened, state)
	return fakeRound{f}, nil
}

func (f *fakeFlow) LLMMediated() bool { return f.llm }

type fakeRound struct{ f *fakeFlow }

type inRound struct{}

func (r fakeRound) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, inRound{}, true)
}
func (r fakeRound) Settle(context.Context) { r.f.settled++ }
func (r fakeRound) Stop(_ context.Context, _ Peer, cause error) (*Stop, error) {
	r.f.causes = append(r.f.causes, cause)
	return r.f.stop, nil
}

func newFrontendEngine(t *testing.T, f Flow) *Engine {
	t.Helper()
	keys, err := ring.New([]byte("engine test secret of thirty-two bytes!!"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(keys, memory.New(nil), f, Limits{Max: 10, PerClient: 10, MaxBytes: 1 << 20, PerClientBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestBeginFinish runs a tool call through the operations a front-end
// calls: the handler's context carries the call, the Flow's preparation
// and the round; Finish settles once, passes the handler's error to the
// round and returns its stop; the call is tracked until then.
func TestBeginFinish(t *testing.T) {
	f := &fakeFlow{stop: &Stop{RequestState: "ev2.x"}}
	e := newFrontendEngine(t, f)
	p := &fakePeer{info: CallInfo{Who: Identity{Session: "s:1"}, Tool: "t"}}
	ctx, run, err := e.Begin(context.Background(), p, "ev2.state", nil)
	if err != nil {
		t.Fatal(err)
	}
	if PeerFrom(ctx) != p || ctx.Value(prepared{}) == nil || ctx.Value(inRound{}) == nil {
		t.Fatal("the handler's context lacks the call, the preparation or the round")
	}
	if len(f.opened) != 1 || f.opened[0] != "ev2.state" {
		t.Fatalf("Open saw %q", f.opened)
	}
	cause := errors.New("the handler's")
	stop, err := run.Finish(ctx, cause)
	if err != nil || stop != f.stop {
		t.Fatalf("Finish = %v, %v", stop, err)
	}
	run.End(ctx)
	if f.settled != 1 || len(f.causes) != 1 || f.causes[0] != cause {
		t.Fatalf("settled %d times, causes %v", f.settled, f.causes)
	}
	if ctx.Err() == nil {
		t.Error("the call's context outlives Finish")
	}
}

// TestCloseEndsCalls holds that Close ends the calls in progress with
// ErrClosed, waits for them, and refuses new ones; and that EndCalls ends
// only the calls of one identity.
func TestCloseEndsCalls(t *testing.T) {
	f := &fakeFlow{}
	e := newFrontendEngine(t, f)
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

// TestBeginRefused holds that a call the Flow refuses (a requestState that
// does not verify) is not left tracked: Close does not wait for it.
func TestBeginRefused(t *testing.T) {
	bad := &InvalidParamsError{Message: "requestState is invalid", Err: ErrBadState}
	e := newFrontendEngine(t, &fakeFlow{openErr: bad})
	_, _, err := e.Begin(context.Background(), &fakePeer{}, "ev2.forged", nil)
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
		e := newFrontendEngine(t, &fakeFlow{llm: c.llm})
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
	e := newFrontendEngine(t, &fakeFlow{})
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

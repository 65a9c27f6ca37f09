package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the go-sdk's side of a tool call: the one place where the
// flow reaches a *mcp.ServerSession. Everything else reaches the client
// through engine.Peer, which gosdkPeer implements.

// gosdkPeer is a tool call of the go-sdk, as the engine sees it.
type gosdkPeer struct {
	e    *Elicitor
	ss   *mcp.ServerSession
	info engine.CallInfo
}

// newPeer reads the identity and the capabilities of the call req, once.
// ctx is the request's (it carries the client ID, contextWithClientID).
func (pa *goSDK) newPeer(ctx context.Context, req *mcp.CallToolRequest) (*gosdkPeer, error) {
	e := pa.e
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, errNoSession
	}
	p := &gosdkPeer{e: e, ss: req.Session}
	in := &p.info
	in.Who = e.sdk.identity(req)
	in.ClientID = engine.ClientID(ctx)
	in.Tool, in.Arguments = req.Params.Name, req.Params.Arguments
	meta := req.Params.GetMeta()
	var caps *mcp.ClientCapabilities
	in.Protocol, caps = clientCapabilities(req.Session, meta)
	in.FormMode, in.URLMode = modes(caps)
	in.LogLevel = e.sessions.info(req.Session).level()
	if meta != nil && in.Protocol >= engine.ProtocolInputRequests {
		// On 2026-07-28 the level is per request (and none is none).
		//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
		in.LogLevel, _ = meta[mcp.MetaKeyLogLevel].(string)
	}
	in.ProgressToken = req.Params.GetProgressToken()
	return p, nil
}

func (p *gosdkPeer) Call() *engine.CallInfo { return &p.info }

// Elicit sends elicitation/create. The sending middleware keeps the
// client's answer as it came: the go-sdk's verdict on it does not count.
func (p *gosdkPeer) Elicit(ctx context.Context, ep *engine.ElicitParams) (*engine.Reply, error) {
	capture := &rawCapture{}
	res, err := p.ss.Elicit(context.WithValue(ctx, captureKey{}, capture), sdkParams(ep))
	if capture.res != nil {
		res, err = capture.res, nil
	}
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, &engine.ClientError{Code: we.Code}
		}
		return nil, err
	}
	r := &engine.Reply{Action: string(res.Action)}
	if res.Content != nil {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return nil, fmt.Errorf("%w: content does not encode", errMalformed)
		}
		r.Content = b
	}
	return r, nil
}

// NotifyComplete sends notifications/elicitation/complete. With the
// context of the call in progress it goes with the call's messages (its
// stream, on Streamable HTTP); after the call, ctx must not be the call's:
// the go-sdk would send it on the call's closed stream and drop it.
func (p *gosdkPeer) NotifyComplete(ctx context.Context, id string) {
	p.ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
}

func (p *gosdkPeer) Progress(ctx context.Context, progress float64, message string) {
	p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.info.ProgressToken, Progress: progress, Message: message})
}

func (p *gosdkPeer) Log(ctx context.Context, level, logger, text string) {
	//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
	p.ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: text})
}

// WatchEnd calls ended once the session ends, the first time it is asked
// for a session (engine.SessionWatcher). A session that the table of a
// Handler holds needs no watch: the table ends it.
func (p *gosdkPeer) WatchEnd(ended func()) {
	if p.e.heldByCap(p.info.Who.Session) {
		return
	}
	if info := p.e.sessions.info(p.ss); info.watched.CompareAndSwap(false, true) {
		ss := p.ss
		go func() {
			ss.Wait()
			ended()
		}()
	}
}

// sdkParams converts the params of an elicitation request.
func sdkParams(ep *engine.ElicitParams) *mcp.ElicitParams {
	p := &mcp.ElicitParams{Mode: ep.Mode, Message: ep.Message, URL: ep.URL, ElicitationID: ep.ElicitationID}
	if ep.RequestedSchema != nil {
		p.RequestedSchema = ep.RequestedSchema
	}
	return p
}

// receiving is the Elicitor's receiving middleware: it puts the Elicitor in
// every request's context, keeps the client's logging level, lists and
// serves fallbackTool, and runs every tool call through the engine
// (engine.Engine.Begin and Run.Finish): on 2026-07-28 the rounds of input
// requests, everywhere the stop of an LLM-mediated elicitation and -32042.
func (pa *goSDK) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	e := pa.e
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = e.prepare(ctx)
		switch method {
		case "tools/call":
		case "tasks/get", "tasks/update", "tasks/cancel":
			return e.task.serveTask(ctx, method, req, next)
		case "initialize", "server/discover":
			return e.task.advertiseTasks(next(ctx, method, req))
		case "tools/list":
			return e.task.listTaskTools(req)(e.sdk.listTools(ctx, req, next))
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
			if sl, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && err == nil && sl.Session != nil && sl.Params != nil {
				e.sessions.info(sl.Session).lvl.Store(sl.Params.Level)
			}
			return res, err
		default:
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil || !engine.OwnsState(ctr.Params.RequestState) {
			return next(ctx, method, req)
		}
		peer, err := e.sdk.newPeer(ctx, ctr)
		if err != nil {
			return next(ctx, method, req) // no session: the calls say ErrNotInstalled
		}
		if ctr.Params.Name == engine.FallbackTool && e.enabled(LLMMediated) {
			return e.sdk.serveAnswer(ctx, peer, ctr, next)
		}
		call := newCall(peer)
		if res, err, ok := e.task.startTask(engine.WithPeer(ctx, peer), call, ctr, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		}); ok {
			return res, err
		}
		rctx, run, err := e.engine.Begin(ctx, peer, ctr.Params.RequestState, inputResponses(ctr.Params))
		if err != nil {
			return nil, rpcError(err)
		}
		defer run.End(rctx)
		res, err := next(rctx, method, req)
		stop, serr := run.Finish(rctx, causeOf(res, err))
		switch {
		case serr != nil:
			return nil, rpcError(serr)
		case stop != nil:
			return stopResult(call, stop)
		}
		// A handler that asked for its call to go on as a task
		// (StartTask) after its rounds. Finish ended the run, and with
		// it rctx: the task starts from the request's context.
		return e.task.escalate(engine.WithPeer(ctx, peer), call, ctr)(res, err)
	}
}

// serveAnswer serves fallbackTool (engine.Engine.Answer): the
// continuation runs the original tool through the rest of the chain.
func (pa *goSDK) serveAnswer(ctx context.Context, peer *gosdkPeer, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	e := pa.e
	call := newCall(peer)
	var res mcp.Result
	var herr error
	ans, err := e.engine.Answer(ctx, peer, func(ctx context.Context, tool string, args json.RawMessage) error {
		creq := &mcp.CallToolRequest{
			Session: req.Session,
			Extra:   req.Extra,
			Params:  &mcp.CallToolParamsRaw{Meta: req.Params.Meta, Name: tool, Arguments: args},
		}
		res, herr = next(ctx, "tools/call", creq)
		return causeOf(res, herr)
	})
	switch {
	case err != nil:
		return nil, rpcError(err)
	case ans.ToolError != "":
		return toolErrorResult(call, ans.ToolError), nil
	case ans.Replayed != nil:
		var r mcp.CallToolResult
		if json.Unmarshal(ans.Replayed, &r) != nil {
			return toolErrorResult(call, engine.ErrAnswered.Error()), nil
		}
		return &r, nil
	case ans.Stop != nil:
		res, herr = stopResult(call, ans.Stop)
	}
	if tr, ok := res.(*mcp.CallToolResult); ok && herr == nil && tr != nil && ans.Keep != nil {
		ans.Keep(ctx, tr)
	}
	return res, herr
}

// causeOf is what a handler returned, as the engine reads it: its error,
// or the error its tool error result reports.
func causeOf(res mcp.Result, err error) error {
	if err != nil {
		return err
	}
	if tr, ok := res.(*mcp.CallToolResult); ok && tr != nil {
		return tr.GetError()
	}
	return nil
}

// inputResponses are the call's inputResponses as the client sent them.
func inputResponses(p *mcp.CallToolParamsRaw) map[string]json.RawMessage {
	if len(p.InputResponses) == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, len(p.InputResponses))
	for k, v := range p.InputResponses {
		if v == nil {
			continue
		}
		if b, err := json.Marshal(v); err == nil {
			m[k] = b
		}
	}
	return m
}

// rpcError is err as the go-sdk sends it: -32602 for an
// *engine.InvalidParamsError.
func rpcError(err error) error {
	var ip *engine.InvalidParamsError
	if errors.As(err, &ip) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: ip.Error()}
	}
	return err
}

// stopResult is the go-sdk's answer to a call that stopped (engine.Stop).
func stopResult(call *Call, stop *engine.Stop) (mcp.Result, error) {
	switch {
	case stop.InputRequests != nil:
		tmpl, err := inputRequiredResult()
		if err != nil {
			return nil, fmt.Errorf("elicit: %w", err)
		}
		res := *tmpl
		res.InputRequests = make(mcp.InputRequestMap, len(stop.InputRequests))
		for k, p := range stop.InputRequests {
			res.InputRequests[k] = sdkParams(p)
		}
		res.RequestState = stop.RequestState
		return &res, nil
	case stop.Pending != nil:
		res := completeResult(call)
		res.Content = []mcp.Content{&mcp.TextContent{Text: stop.Pending.Text}}
		res.Meta = mcp.Meta(stop.Pending.Meta)
		return res, nil
	}
	ps := make([]*mcp.ElicitParams, len(stop.URLRequired))
	for i, p := range stop.URLRequired {
		ps[i] = sdkParams(p)
	}
	var we *jsonrpc.Error
	errors.As(mcp.URLElicitationRequiredError(ps), &we)
	return nil, we
}

// inputRequiredResult is the template of an input-required result. The
// go-sdk sets its result type only on results a handler returns; this one
// replaces the handler's, so it is a copy of the template, which was
// decoded from its wire form once (a decoding costs the go-sdk's JSON
// decoder a large buffer: once per process, not once per round).
var inputRequiredResult = sync.OnceValues(func() (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	err := json.Unmarshal([]byte(`{"resultType":"input_required"}`), &res)
	return &res, err
})

// completeResult returns an empty tool result of the kind the call's
// session expects: one built here must say it is complete itself on
// 2026-07-28.
func completeResult(c *Call) *mcp.CallToolResult {
	var res mcp.CallToolResult
	if callComplete(c) {
		res = *completeTemplate() // decoded once, as inputRequiredResult
	}
	res.Content = []mcp.Content{}
	return &res
}

var completeTemplate = sync.OnceValue(func() *mcp.CallToolResult {
	var res mcp.CallToolResult
	json.Unmarshal([]byte(`{"resultType":"complete"}`), &res)
	return &res
})

// toolErrorResult is a tool error result with text.
func toolErrorResult(c *Call, text string) *mcp.CallToolResult {
	res := completeResult(c)
	res.IsError = true
	res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	return res
}

// fallbackTool is engine.FallbackTool as listed.
var fallbackTool = &mcp.Tool{
	Name:        engine.FallbackTool,
	Title:       engine.FallbackToolTitle,
	Description: engine.FallbackToolDescription,
	InputSchema: engine.FallbackToolSchema,
}

// rawCapture receives the client's answer from the sending middleware
// before the go-sdk validates it, so that the result flow validates it
// instead, with errors that name the path and never quote content.
type rawCapture struct {
	res *mcp.ElicitResult
}

type captureKey struct{}

// sending is the Elicitor's sending middleware. For the Elicitor's own
// elicitation/create it keeps the client's answer and hands the go-sdk's
// ServerSession.Elicit the answer without its content: the go-sdk would
// otherwise check the content against the schema too (resolving the
// schema on every call), and its verdict is not the one that counts.
func (pa *goSDK) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if c, ok := ctx.Value(captureKey{}).(*rawCapture); ok && err == nil {
			if r, ok := res.(*mcp.ElicitResult); ok && r != nil {
				cp := *r
				c.res = &cp
				return &mcp.ElicitResult{Meta: r.Meta, Action: r.Action}, nil
			}
		}
		return res, err
	}
}

// identity is the identity of the call req: its authenticated user
// (TokenInfo.UserID) and its session, the transport's session ID; for a
// stateless HTTP server (the only kind that speaks 2026-07-28 over HTTP),
// where every request has a session of its own and may arrive on another
// node, none (engine.Sessionless: state is bound to the subject alone);
// otherwise (stdio, in-memory) a process-local ID of the connection. req
// must have a session.
func (pa *goSDK) identity(req *mcp.CallToolRequest) engine.Identity {
	e := pa.e
	var who engine.Identity
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		who.Subject = req.Extra.TokenInfo.UserID
	}
	switch id := req.Session.ID(); {
	case id != "":
		who.Session = engine.TransportSession(id)
	case req.Extra != nil && req.Extra.Header != nil:
		who.Session = engine.Sessionless
	default:
		who.Session = e.sessions.info(req.Session).id
	}
	return who
}

// clientCapabilities returns the protocol version and the capabilities of
// the client, as the session's initialize gave them and, on 2026-07-28, as
// the request's _meta overrides them (SEP-2575).
func clientCapabilities(ss *mcp.ServerSession, meta mcp.Meta) (protocol string, caps *mcp.ClientCapabilities) {
	if init := ss.InitializeParams(); init != nil {
		protocol, caps = init.ProtocolVersion, init.Capabilities
	}
	if meta == nil {
		return protocol, caps
	}
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
		protocol = v
	}
	if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
		if el, ok := metaElicitation(raw); ok {
			return protocol, &mcp.ClientCapabilities{Elicitation: el}
		}
		var mc struct {
			Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
		}
		if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &mc) == nil {
			caps = &mcp.ClientCapabilities{Elicitation: mc.Elicitation}
		}
	}
	return protocol, caps
}

// metaElicitation reads the elicitation capabilities of a request's _meta
// from the maps the go-sdk decoded it into, as decoding their JSON would,
// without encoding them again. It reports false for what it does not
// read so (not an object, a key that matches only without regard to case,
// a mode that is not an object or null): clientCapabilities decodes those.
func metaElicitation(raw any) (*mcp.ElicitationCapabilities, bool) {
	caps, ok := raw.(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := exactKey(caps, "elicitation")
	if !ok {
		return nil, false
	}
	if v == nil {
		return nil, true
	}
	el, isMap := v.(map[string]any)
	if !isMap {
		return nil, false
	}
	out := &mcp.ElicitationCapabilities{}
	for _, mode := range [...]string{"form", "url"} {
		m, ok := exactKey(el, mode)
		if _, isMap := m.(map[string]any); !ok || (m != nil && !isMap) {
			return nil, false
		}
		switch {
		case m == nil:
		case mode == "form":
			out.Form = &mcp.FormElicitationCapabilities{}
		default:
			out.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	return out, true
}

// exactKey returns m[key] (nil when absent), and false when another key
// of m equals key without regard to case, which encoding/json would match.
func exactKey(m map[string]any, key string) (any, bool) {
	for k := range m {
		if k != key && strings.EqualFold(k, key) {
			return nil, false
		}
	}
	return m[key], true
}

// modes reads the elicitation modes from capabilities.
func modes(caps *mcp.ClientCapabilities) (form, url bool) {
	if caps == nil || caps.Elicitation == nil {
		return false, false
	}
	el := caps.Elicitation
	// {} means form, for clients from before modes existed.
	return el.Form != nil || el.URL == nil, el.URL != nil
}

// sessions keeps what the flow knows of each live session: the ID it binds
// state to (the transport's, or a random process-local one for stdio and
// in-memory transports) and the logging level the client set. An entry is
// forgotten when its session is collected.
type sessions struct {
	m sync.Map // weak.Pointer[mcp.ServerSession] → *sessionInfo
}

type sessionInfo struct {
	id      string
	watched atomic.Bool  // its end is watched (Elicitor.leave)
	lvl     atomic.Value // mcp.LoggingLevel, from logging/setLevel
}

// level returns the logging level the client set, or "".
func (i *sessionInfo) level() string {
	//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
	l, _ := i.lvl.Load().(mcp.LoggingLevel)
	return string(l)
}

func (s *sessions) info(ss *mcp.ServerSession) *sessionInfo {
	wp := weak.Make(ss)
	if v, ok := s.m.Load(wp); ok {
		return v.(*sessionInfo)
	}
	info := &sessionInfo{id: engine.LocalSession()}
	if v, loaded := s.m.LoadOrStore(wp, info); loaded {
		return v.(*sessionInfo)
	}
	runtime.AddCleanup(ss, func(wp weak.Pointer[mcp.ServerSession]) { s.m.Delete(wp) }, wp)
	return info
}

// callComplete reports whether results built for the call must say that
// they are complete: its session speaks 2026-07-28, or had no initialize.
// The go-sdk marks only the results handlers return.
func callComplete(c *Call) bool {
	p, ok := c.peer.(*gosdkPeer)
	if !ok {
		return true
	}
	init := p.ss.InitializeParams()
	return init == nil || init.ProtocolVersion >= engine.ProtocolInputRequests
}

// needsFallbackTool reports whether a client should see fallbackTool.
func (pa *goSDK) needsFallbackTool(ss *mcp.ServerSession, meta mcp.Meta) bool {
	e := pa.e
	if ss == nil {
		return false
	}
	_, caps := clientCapabilities(ss, meta)
	return e.engine.ListsFallbackTool(modes(caps))
}

// listTools adds fallbackTool to the last page of tools/list for the
// clients that need it.
func (pa *goSDK) listTools(ctx context.Context, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	e := pa.e
	res, err := next(ctx, "tools/list", req)
	if err != nil {
		return res, err
	}
	lr, ok := res.(*mcp.ListToolsResult)
	lreq, ok2 := req.(*mcp.ListToolsRequest)
	if !ok || !ok2 || lr == nil || lr.NextCursor != "" {
		return res, err
	}
	var meta mcp.Meta
	if lreq.Params != nil {
		meta = lreq.Params.GetMeta()
	}
	if !e.sdk.needsFallbackTool(lreq.Session, meta) {
		return res, err
	}
	if slices.ContainsFunc(lr.Tools, func(t *mcp.Tool) bool { return t != nil && t.Name == engine.FallbackTool }) {
		return res, err
	}
	out := *lr
	out.Tools = append(slices.Clone(lr.Tools), fallbackTool)
	// The list depends on the client's capabilities.
	out.CacheScope = "private"
	return &out, nil
}

// goSDK is the go-sdk front-end: the middleware, and the identity and
// capabilities of its calls.
type goSDK struct{ e *Elicitor }

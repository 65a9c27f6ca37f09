package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// peer is one tool call of an mcp-go server as the engine sees it
// (engine.Peer): the call's identity and capabilities, read once when the
// call starts, and the session that carried it, through which requests
// and notifications reach the client.
type peer struct {
	m       *server.MCPServer
	session server.ClientSession
	info    engine.CallInfo
}

var _ engine.Peer = (*peer)(nil)

func (p *peer) Call() *engine.CallInfo { return &p.info }

// Elicit sends elicitation/create on the call's session: on Streamable
// HTTP on the stream of the POST that carries the call (ctx must be the
// handler's, or derive from it), else on the session's. It never goes
// through mcp-go's legacy bridge. The reply's content is re-encoded as it
// came; nothing fills in defaults.
func (p *peer) Elicit(ctx context.Context, ep *engine.ElicitParams) (*engine.Reply, error) {
	es, ok := p.session.(server.SessionWithElicitation)
	if !ok {
		return nil, server.ErrElicitationNotSupported
	}
	params := mcp.ElicitationParams{Mode: ep.Mode, Message: ep.Message, URL: ep.URL, ElicitationID: ep.ElicitationID}
	if len(ep.RequestedSchema) > 0 {
		// As a json.RawMessage the fields keep the server's order.
		params.RequestedSchema = ep.RequestedSchema
	}
	res, err := es.RequestElicitation(p.m.WithContext(ctx, p.session), mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  params,
	})
	if err != nil {
		return nil, elicitError(ctx, err)
	}
	if res == nil {
		return nil, errors.New("elicit: the client sent no elicitation result")
	}
	r := &engine.Reply{Action: string(res.Action)}
	if res.Content != nil {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return nil, fmt.Errorf("elicit: the client's content does not encode: %w", err)
		}
		r.Content = b
	}
	return r, nil
}

// elicitError reduces an error of mcp-go's RequestElicitation to what may
// be logged: mcp-go puts the client's JSON-RPC error message in its
// error's text, which may quote what the user typed. A client's error is
// an *engine.ClientError with its code alone (mcp-go's stdio transport
// keeps no code: -32603).
func elicitError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "elicitation/create error "); ok {
		code, _, _ := strings.Cut(rest, ":")
		if n, perr := strconv.ParseInt(code, 10, 64); perr == nil {
			return &engine.ClientError{Code: n}
		}
	}
	if strings.HasPrefix(msg, "elicitation request failed: ") {
		return &engine.ClientError{Code: mcp.INTERNAL_ERROR}
	}
	if errors.Is(err, server.ErrElicitationNotSupported) {
		return err
	}
	return errors.New("elicit: mcp-go could not deliver elicitation/create, or read its answer")
}

// NotifyComplete sends notifications/elicitation/complete. During a call
// on stdio the handler writes it itself, so that it comes before the
// call's response (see lockedWriter.notify); else it goes through mcp-go.
func (p *peer) NotifyComplete(ctx context.Context, id string) {
	if out, ok := ctx.Value(stdioOutKey{}).(*lockedWriter); ok {
		out.notify(mcp.NewElicitationCompleteNotification(id))
		return
	}
	if p.m.SendElicitationComplete(p.m.WithContext(context.WithoutCancel(ctx), p.session), p.session, id) == nil && ctx.Err() == nil {
		settle(p.session)
	}
}

func (p *peer) Progress(ctx context.Context, progress float64, message string) {
	if p.info.ProgressToken == nil {
		return
	}
	p.m.SendNotificationToClient(p.m.WithContext(ctx, p.session), "notifications/progress", map[string]any{
		"progressToken": p.info.ProgressToken,
		"progress":      progress,
		"message":       message,
	})
}

// settle gives mcp-go's Streamable HTTP forwarder the time to write a
// notification sent during a call before the call returns. mcp-go
// v1.2.1 drops one that its forwarder took off the session's channel
// just before the call's response closed the stream (the forwarder then
// finds the stream done): elicitation/complete is sent right before the
// handler returns. With a standalone GET stream open (2025-11-25), mcp-go
// mostly writes it there instead (both read the session's channel), so
// waiting until it is written would not do: the 20 ms also let the
// client read it on that stream before the response on the POST's.
func settle(session server.ClientSession) {
	if _, http := session.(server.SessionWithStreamableHTTPConfig); !http {
		return
	}
	for i := 0; i < 50 && len(session.NotificationChannel()) > 0; i++ {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}

// Log sends notifications/message through mcp-go, which applies the
// level the client asked for: the request's on 2026-07-28, the session's
// before.
func (p *peer) Log(ctx context.Context, level, logger, text string) {
	p.m.SendLogMessageToClient(p.m.WithContext(ctx, p.session),
		mcp.NewLoggingMessageNotification(mcp.LoggingLevel(level), logger, text))
}

// callInfo reads what the engine needs of the call req from ctx, the tool
// handler's: its identity, client ID, protocol version, capabilities,
// logging level and progress token. Capabilities are this request's: the _meta of a
// 2026-07-28 request, the session's initialize before.
func (f *Server) callInfo(ctx context.Context, req *mcp.CallToolRequest) (engine.CallInfo, server.ClientSession, error) {
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return engine.CallInfo{}, nil, errNoSession
	}
	info := engine.CallInfo{
		Who:       f.identity(ctx, session),
		ClientID:  engine.ClientID(ctx), // Handler's, from the HTTP request
		Tool:      req.Params.Name,
		Arguments: rawArguments(req),
		Protocol:  server.RequestProtocolVersion(ctx),
	}
	var caps *mcp.ClientCapabilities
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.Modern {
		caps = pi.ClientCapabilities
		info.LogLevel = string(pi.LogLevel)
	} else {
		if ci, ok := session.(server.SessionWithClientInfo); ok {
			c := ci.GetClientCapabilities()
			caps = &c
		}
		if sl, ok := session.(server.SessionWithLogging); ok && f.levelSet(session) {
			info.LogLevel = string(sl.GetLogLevel())
		}
	}
	info.FormMode, info.URLMode = modes(caps)
	if req.Params.Meta != nil {
		info.ProgressToken = req.Params.Meta.ProgressToken
	}
	return info, session, nil
}

// modes reads the elicitation modes from caps: an empty elicitation
// capability is form mode alone, for clients from before modes existed.
func modes(caps *mcp.ClientCapabilities) (form, url bool) {
	if caps == nil {
		return false, false
	}
	return elicitationModes(caps.Elicitation)
}

// elicitationModes is modes of a client's elicitation capability.
func elicitationModes(el *mcp.ElicitationCapability) (form, url bool) {
	if el == nil {
		return false, false
	}
	return el.Form != nil || el.URL == nil, el.URL != nil
}

// rawArguments is the arguments of req as they came on the wire.
func rawArguments(req *mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, _ := json.Marshal(req.Params.Arguments)
	return b
}

// identity is whom the call's state belongs to: the user Options.Subject
// returns, and the session. A Streamable HTTP session with an ID (a
// stateful session of 2025-11-25 or before) binds state to that ID,
// whichever node it reaches; one without (2026-07-28, a stateless server)
// is engine.Sessionless; any other connection (stdio, in-process) gets a
// process-local ID for as long as it lives.
func (f *Server) identity(ctx context.Context, session server.ClientSession) engine.Identity {
	who := engine.Identity{Subject: f.subject(ctx)}
	if _, http := session.(server.SessionWithStreamableHTTPConfig); http {
		if id := session.SessionID(); id != "" && !server.IsModernRequest(ctx) {
			who.Session = engine.TransportSession(id)
		} else {
			who.Session = engine.Sessionless
		}
		return who
	}
	if id, ok := ctx.Value(stdioKey{}).(string); ok {
		who.Session = id
		return who
	}
	who.Session = f.local(session)
	return who
}

func (f *Server) subject(ctx context.Context) string {
	if f.opts.Subject == nil {
		return ""
	}
	return f.opts.Subject(ctx)
}

// local returns the process-local session ID of a connection without a
// transport session ID, which the session's end forgets.
func (f *Server) local(session server.ClientSession) string {
	if v, ok := f.locals.Load(session); ok {
		return v.(string)
	}
	v, _ := f.locals.LoadOrStore(session, engine.LocalSession())
	return v.(string)
}

// levelSet reports whether the client of session set a logging level.
func (f *Server) levelSet(session server.ClientSession) bool {
	_, ok := f.levels.Load(session)
	return ok
}

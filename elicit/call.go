package elicit

import (
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions the flow distinguishes.
const (
	// ProtocolInputRequests is the first protocol version in which a server
	// must not send requests to the client during a tool call: it returns
	// input requests instead and the client calls again (SEP-2322).
	ProtocolInputRequests = "2026-07-28"
)

// Call describes the tool call an elicitation belongs to, as hooks and
// policies see it. It never holds the session ID or the subject.
type Call struct {
	// Tool is the name of the tool being called.
	Tool string
	// Protocol is the protocol version of the call.
	Protocol string
	// FormMode and URLMode report the client's elicitation capabilities
	// for this call.
	FormMode, URLMode bool

	req      *mcp.CallToolRequest
	who      engine.Identity
	logLevel string // the client's logging level, "" when it set none
	progress any    // the call's progress token, or nil
}

// Request returns the go-sdk request of the call, for policies that need
// the session (issue 6's fallbacks).
func (c *Call) Request() *mcp.CallToolRequest { return c.req }

// inputRequests reports whether the call's protocol forbids requests to the
// client and uses input requests instead.
func (c *Call) inputRequests() bool { return c.Protocol >= ProtocolInputRequests }

// newCall reads the call's identity and capabilities from req.
func (e *Elicitor) newCall(req *mcp.CallToolRequest) (*Call, error) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, ErrNoSession
	}
	c := &Call{Tool: req.Params.Name, req: req, who: e.identity(req)}
	info := e.sessions.info(req.Session)
	var caps *mcp.ClientCapabilities
	c.Protocol, caps = clientCapabilities(req.Session, req.Params.GetMeta())
	c.FormMode, c.URLMode = modes(caps)
	c.logLevel = info.level()
	if meta := req.Params.GetMeta(); c.inputRequests() && meta != nil {
		// On 2026-07-28 the level is per request (and none is none).
		//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still delivered, and the one channel to the user outside the model
		c.logLevel, _ = meta[mcp.MetaKeyLogLevel].(string)
	}
	c.progress = req.Params.GetProgressToken()
	return c, nil
}

// identity is the identity of the call req: its authenticated user
// (TokenInfo.UserID) and its session, the transport's session ID; for a
// stateless HTTP server (the only kind that speaks 2026-07-28 over HTTP),
// where every request has a session of its own and may arrive on another
// node, none (engine.Sessionless: state is bound to the subject alone);
// otherwise (stdio, in-memory) a process-local ID of the connection. req
// must have a session.
func (e *Elicitor) identity(req *mcp.CallToolRequest) engine.Identity {
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
		var mc struct {
			Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
		}
		if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &mc) == nil {
			caps = &mcp.ClientCapabilities{Elicitation: mc.Elicitation}
		}
	}
	return protocol, caps
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

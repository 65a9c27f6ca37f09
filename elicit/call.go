package elicit

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"runtime"
	"sync"
	"weak"

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

	req     *mcp.CallToolRequest
	session string // the session ID, or a process-local one
	subject string // the authenticated user, or ""
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
	c := &Call{Tool: req.Params.Name, req: req}
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		c.subject = req.Extra.TokenInfo.UserID
	}
	c.session = e.sessions.id(req.Session)

	init := req.Session.InitializeParams()
	var caps *mcp.ClientCapabilities
	if init != nil {
		c.Protocol = init.ProtocolVersion
		caps = init.Capabilities
	}
	// On 2026-07-28 every request carries its protocol version and the
	// client's capabilities in _meta (SEP-2575); they win over whatever the
	// session saw first.
	if meta := req.Params.GetMeta(); meta != nil {
		if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
			c.Protocol = v
		}
		if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
			var mc struct {
				Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
			}
			if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &mc) == nil {
				caps = &mcp.ClientCapabilities{Elicitation: mc.Elicitation}
			}
		}
	}
	if c.inputRequests() && req.Session.ID() == "" {
		// Every round may arrive on a new connection: bind to the subject
		// (and to tool and arguments, in the requestState) alone.
		c.session = sessionless
	}
	if caps != nil && caps.Elicitation != nil {
		el := caps.Elicitation
		// {} means form, for clients from before modes existed.
		c.FormMode = el.Form != nil || el.URL == nil
		c.URLMode = el.URL != nil
	}
	return c, nil
}

// sessionIDs names sessions that have no ID of their own (stdio, in-memory
// transports) with a random process-local ID, forgotten when the session
// is collected.
type sessionIDs struct {
	m sync.Map // weak.Pointer[mcp.ServerSession] → string
}

func (s *sessionIDs) id(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return "s:" + id
	}
	wp := weak.Make(ss)
	if v, ok := s.m.Load(wp); ok {
		return v.(string)
	}
	id := "l:" + randomID()
	if v, loaded := s.m.LoadOrStore(wp, id); loaded {
		return v.(string)
	}
	runtime.AddCleanup(ss, func(wp weak.Pointer[mcp.ServerSession]) { s.m.Delete(wp) }, wp)
	return id
}

// randomID returns 128 random bits as base64url.
func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

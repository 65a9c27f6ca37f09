package elicit

import (
	"context"

	"github.com/elicitvault/elicitvault/internal/engine"
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

	peer engine.Peer
	info *engine.CallInfo
	who  engine.Identity
}

// newCall describes the call p, as its front-end presents it.
func newCall(p engine.Peer) *Call {
	info := p.Call()
	return &Call{
		Tool:     info.Tool,
		Protocol: info.Protocol,
		FormMode: info.FormMode,
		URLMode:  info.URLMode,
		peer:     p,
		info:     info,
		who:      info.Who,
	}
}

// callFrom describes the call ctx carries (engine.WithPeer), which the
// front-end's middleware put there: ErrNotInstalled without one.
func callFrom(ctx context.Context) (*Call, error) {
	p := engine.PeerFrom(ctx)
	if p == nil {
		return nil, ErrNotInstalled
	}
	return newCall(p), nil
}

package elicit

import (
	"net/http"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// endSessionOnDelete wraps a stateful Streamable HTTP handler so that a
// DELETE of a session (the client ending it) first ends the session's
// waiting tool calls: their elicitations return ErrSessionEnded, instead of
// the DELETE hanging until they time out (the go-sdk closes a session only
// once its calls have returned). Only calls of the DELETE's authenticated
// user (auth.TokenInfoFromContext, "" without authentication) are ended:
// put authentication outside this handler.
//
// What a session left pending (an LLM-mediated elicitation, an input
// request's URL elicitation) is deleted from the store when the session
// ends, however it ends; that needs no wrapper.
//
// Handler uses it; a server that mounts the go-sdk's handler itself with
// it has none of Handler's session caps and request deadlines.
func (e *Elicitor) endSessionOnDelete(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			if id := r.Header.Get("Mcp-Session-Id"); id != "" {
				var subject string
				if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
					subject = ti.UserID
				}
				e.engine.EndCalls(engine.Identity{Subject: subject, Session: engine.TransportSession(id)}, ErrSessionEnded)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// heldByCap reports whether the session table of a Handler holds the
// session: its end then deletes what it left pending, with no goroutine
// waiting for it.
func (e *Elicitor) heldByCap(session string) bool {
	e.mu.Lock()
	caps := e.caps
	e.mu.Unlock()
	for _, c := range caps {
		if c.holds(session) {
			return true
		}
	}
	return false
}

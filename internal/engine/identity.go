package engine

import (
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/token"
)

// Sessionless is the session of a call on a stateless HTTP server, where
// every request may arrive on a new connection and another node: there
// state is bound to the subject alone (and a requestState to the tool and
// its arguments too).
const Sessionless = "-"

const (
	transportPrefix = "s:" // a transport's session ID (Streamable HTTP)
	localPrefix     = "l:" // a connection of this process (stdio, in-memory)
)

// Identity is whom a tool call's state belongs to. A front-end computes it
// once per call; every record, token and quota of the call derives from
// it. Session IDs never leave the process in the clear: bindings seal and
// blind them.
type Identity struct {
	// Subject is the authenticated user, or "" without authentication.
	Subject string
	// Session is the session the call's state is bound to: a
	// TransportSession, a LocalSession, or Sessionless.
	Session string
}

// TransportSession is the Session of a call on a transport that has
// session IDs (stateful Streamable HTTP), whichever node it reaches.
func TransportSession(id string) string { return transportPrefix + id }

// TransportID is the transport's session ID of session, and whether
// session is a TransportSession.
func TransportID(session string) (string, bool) {
	return strings.CutPrefix(session, transportPrefix)
}

// LocalSession returns a new Session for a connection without a session
// ID (stdio, in-memory): 128 random bits, known to this process only. A
// front-end keeps it for as long as the connection lives.
func LocalSession() string { return localPrefix + RandomID() }

// HasSession reports whether the call has a session to share state with:
// a transport session or a connection. Without one (Sessionless),
// elicitations of different clients, or of one user's parallel chats,
// share nothing.
func (id Identity) HasSession() bool { return id.Session != Sessionless }

// ClaimsIdentity is the identity of the call a verified token was issued
// to.
func ClaimsIdentity(c *token.Claims) Identity {
	return Identity{Subject: c.Subject, Session: c.SessionID}
}

// Binding is the envelope binding of the call's record for purpose and
// record ID.
func (id Identity) Binding(purpose, record string) envelope.Binding {
	return envelope.Binding{Purpose: purpose, Subject: id.Subject, SessionID: id.Session, RecordID: record}
}

// Client is the client the call counts against in quotas: the
// authenticated user, else the session, else, on a stateless server,
// clientID (an address the front-end read from the request). Without one,
// anonymous stateless callers share one client.
func (id Identity) Client(clientID string) string {
	switch {
	case id.Subject != "":
		return "u:" + id.Subject
	case id.HasSession():
		return id.Session
	}
	return "c:" + clientID
}

// RandomID returns 128 random bits as base64url.
func RandomID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

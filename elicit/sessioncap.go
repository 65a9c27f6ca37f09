package elicit

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/clientid"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the session caps of HandlerOptions. The go-sdk keeps a
// goroutine and about 15 KiB for each session: some 75 MiB for
// defaultMaxSessions.
const (
	defaultMaxSessions          = 5000
	defaultMaxSessionsPerClient = 32
	defaultSessionTimeout       = 30 * time.Minute
)

// errSessionEvicted is returned to the handler of a call that waited in a
// session closed to make room for a newer one (HandlerOptions.MaxSessions
// and MaxSessionsPerClient). errors.Is(err, ErrSessionEnded) holds.
var errSessionEvicted = fmt.Errorf("%w: it was idle and was closed to make room for newer sessions (too many open)", ErrSessionEnded)

// sessionClientOf returns the client a new session is counted to: the
// authenticated user when there is one, else the client's address
// (clientid.Addr).
func sessionClientOf(r *http.Request, client func(*http.Request) string) (key, subject string) {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "u:" + ti.UserID, ti.UserID
	}
	return clientid.Addr(r, client), ""
}

// sessionCap is the table of a Handler's live stateful sessions: it
// counts them per client and in total, closes those idle for the
// timeout, and makes room for a new session by closing the oldest idle
// one. An idle session costs it one entry and one runtime timer, no
// goroutine.
type sessionCap struct {
	e              *Elicitor
	inner          http.Handler // the go-sdk's stateful handler, under endSessionOnDelete
	max, perClient int
	timeout        time.Duration
	client         func(*http.Request) string
	mu             sync.Mutex
	byID           map[string]*liveSession
	clients        map[string]*list.List // client → its idle sessions, oldest first
	count          map[string]int        // client → its live sessions
	total          int                   // live sessions and reservations
	idle           list.List             // every idle session, oldest first
}

type liveSession struct {
	id, client, subject string
	ss                  *mcp.ServerSession // once its first request ran
	busy                int                // requests in flight
	timer               *time.Timer        // runs while idle
	gone                bool
	idle, clientIdle    *list.Element // in the idle lists, while idle
}

func newSessionCap(e *Elicitor, inner http.Handler, o *HandlerOptions) *sessionCap {
	c := &sessionCap{
		e: e, inner: inner,
		max: o.MaxSessions, perClient: o.MaxSessionsPerClient, timeout: o.SessionTimeout,
		client:  clientid.Of(o.TrustedProxies),
		byID:    make(map[string]*liveSession),
		clients: make(map[string]*list.List),
		count:   make(map[string]int),
	}
	if c.max <= 0 {
		c.max = defaultMaxSessions
	}
	if c.perClient <= 0 {
		c.perClient = defaultMaxSessionsPerClient
	}
	if c.timeout <= 0 {
		c.timeout = defaultSessionTimeout
	}
	e.mu.Lock()
	e.caps = append(e.caps, c)
	e.mu.Unlock()
	return c
}

// ServeHTTP counts the requests of known sessions and admits new ones.
func (c *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s := c.begin(id)
		if s == nil { // unknown here: the go-sdk answers 404
			c.inner.ServeHTTP(w, r)
			return
		}
		defer c.end(s)
		if r.Method != http.MethodDelete {
			c.inner.ServeHTTP(w, r)
			return
		}
		rec := &sessionIDRecorder{ResponseWriter: w}
		c.inner.ServeHTTP(rec, r)
		if rec.ok() { // not another user's
			c.drop(s)
		}
		return
	}
	if r.Method != http.MethodPost {
		c.inner.ServeHTTP(w, r)
		return
	}
	// A POST without a session creates one.
	client, subject := sessionClientOf(r, c.client)
	evict, status := c.admit(client)
	for _, s := range evict {
		c.close(s, errSessionEvicted)
	}
	if status != 0 {
		msg := "too many sessions open for this client: end one (HTTP DELETE) or retry later"
		if status == http.StatusServiceUnavailable {
			msg = "the server has too many sessions open: retry later"
		}
		w.Header().Set("Retry-After", "10")
		writeJSONRPCError(w, status, -32000, msg)
		return
	}
	s := &liveSession{client: client, subject: subject, busy: 1}
	rec := &sessionIDRecorder{ResponseWriter: w}
	c.inner.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), newSessionKey{c}, s)))
	id := rec.Header().Get("Mcp-Session-Id")
	c.mu.Lock()
	c.countLocked(client, -1) // the reservation of admit
	// Only a session the go-sdk kept: it closes one whose first request
	// was not a successful initialize.
	keep := id != "" && rec.ok() && c.byID[id] == nil && s.ss != nil && s.ss.ID() == id && s.ss.InitializeParams() != nil
	if keep {
		s.id = id
		c.byID[id] = s
		c.countLocked(client, 1)
	}
	c.mu.Unlock()
	if keep {
		c.end(s) // idle from now until its next request
	}
}

// newSessionKey carries the entry of a session being created to the
// capture of its table, which learns its *mcp.ServerSession.
type newSessionKey struct{ c *sessionCap }

// capture is the receiving middleware that gives a new session's entry
// its *mcp.ServerSession: the go-sdk runs a session's requests in a
// context with the values of the HTTP request that created it.
func (c *sessionCap) capture(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s, ok := ctx.Value(newSessionKey{c}).(*liveSession); ok {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				c.mu.Lock()
				if s.ss == nil && s.id == "" && !s.gone {
					s.ss = ss
				}
				c.mu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// admit reserves a place for a new session of client, choosing the idle
// sessions to close for it, or returns the HTTP status of a refusal.
func (c *sessionCap) admit(client string) (evict []*liveSession, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count[client] >= c.perClient {
		l := c.clients[client]
		if l == nil || l.Len() == 0 {
			return nil, http.StatusTooManyRequests
		}
		evict = append(evict, c.takeLocked(l.Front().Value.(*liveSession)))
	}
	// (Past the client's bound, one of its sessions made room already.)
	if c.total >= c.max {
		if c.idle.Len() == 0 {
			return nil, http.StatusServiceUnavailable
		}
		evict = append(evict, c.takeLocked(c.idle.Front().Value.(*liveSession)))
	}
	c.countLocked(client, 1) // reserved until the go-sdk answered
	return evict, 0
}

func (c *sessionCap) countLocked(client string, d int) {
	c.total += d
	c.count[client] += d
	if c.count[client] <= 0 {
		delete(c.count, client)
	}
}

// takeLocked removes an idle session from the table, to close it.
func (c *sessionCap) takeLocked(s *liveSession) *liveSession {
	c.unidleLocked(s)
	s.gone = true
	delete(c.byID, s.id)
	c.countLocked(s.client, -1)
	return s
}

func (c *sessionCap) idleLocked(s *liveSession) {
	s.idle = c.idle.PushBack(s)
	l := c.clients[s.client]
	if l == nil {
		l = list.New()
		c.clients[s.client] = l
	}
	s.clientIdle = l.PushBack(s)
	if s.timer == nil {
		s.timer = time.AfterFunc(c.timeout, func() { c.expire(s) })
	} else {
		s.timer.Reset(c.timeout)
	}
}

func (c *sessionCap) unidleLocked(s *liveSession) {
	if s.busy != 0 || s.gone {
		return
	}
	c.idle.Remove(s.idle)
	if l := c.clients[s.client]; l != nil {
		l.Remove(s.clientIdle)
		if l.Len() == 0 {
			delete(c.clients, s.client)
		}
	}
	s.idle, s.clientIdle = nil, nil
	if s.timer != nil {
		s.timer.Stop()
	}
}

// begin marks a request of session id in flight; nil for a session this
// table does not hold.
func (c *sessionCap) begin(id string) *liveSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.byID[id]
	if s == nil {
		return nil
	}
	c.unidleLocked(s)
	s.busy++
	return s
}

// end marks a request of s finished.
func (c *sessionCap) end(s *liveSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.busy--
	if s.busy == 0 && !s.gone {
		c.idleLocked(s)
	}
}

// drop forgets a session its client deleted.
func (c *sessionCap) drop(s *liveSession) {
	c.mu.Lock()
	if s.gone {
		c.mu.Unlock()
		return
	}
	s.gone = true
	delete(c.byID, s.id)
	c.countLocked(s.client, -1)
	s.ss = nil // the go-sdk closed it
	c.mu.Unlock()
	c.e.engine.SessionEnded(engine.TransportSession(s.id))
}

// expire closes s once it has been idle for the timeout.
func (c *sessionCap) expire(s *liveSession) {
	c.mu.Lock()
	if s.gone || s.busy != 0 || c.byID[s.id] != s {
		c.mu.Unlock()
		return
	}
	c.takeLocked(s)
	c.mu.Unlock()
	c.close(s, ErrSessionEnded)
}

// close ends the waiting calls of a session taken from the table with
// cause, then closes it, and deletes what it left pending.
func (c *sessionCap) close(s *liveSession, cause error) {
	c.e.engine.EndCalls(engine.Identity{Subject: s.subject, Session: engine.TransportSession(s.id)}, cause)
	c.mu.Lock()
	ss := s.ss
	s.ss = nil
	c.mu.Unlock()
	go func() {
		// Short-lived: the go-sdk closes a session once its calls
		// returned, and they were just ended.
		if ss != nil {
			ss.Close()
		}
		c.e.engine.SessionEnded(engine.TransportSession(s.id))
	}()
}

// holds reports whether the table holds the session, for leave.
func (c *sessionCap) holds(session string) bool {
	id, ok := engine.TransportID(session)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id] != nil
}

// sessionIDRecorder notes the status of the response that creates a
// session.
type sessionIDRecorder struct {
	http.ResponseWriter
	status int
}

func (r *sessionIDRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionIDRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *sessionIDRecorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *sessionIDRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *sessionIDRecorder) ok() bool { return r.status == 0 || r.status/100 == 2 }

// writeJSONRPCError writes a JSON-RPC error response without an ID (the
// request was not read).
func writeJSONRPCError(w http.ResponseWriter, status, code int, msg string) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

package engine

import (
	"context"
	"sync"
	"time"
)

// leftover is what sessions left pending in the store, to delete when the
// session ends: elicitations that nothing waits for.
type leftover struct {
	mu sync.Mutex
	m  map[string]map[string]leftRecord // session → elicitation ID → record
}

type leftRecord struct {
	subject string
	expiry  time.Time
}

// leave records that the slot's session left its elicitation pending
// (nothing waits for it), for SessionEnded to delete (LeaveFor). A slot
// without a session is not recorded: leave reports whether it was.
func (l *leftover) leave(s *Slot) bool {
	if !s.Who.HasSession() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[string]map[string]leftRecord)
	}
	ids, ok := l.m[s.Who.Session]
	if !ok {
		ids = make(map[string]leftRecord)
		l.m[s.Who.Session] = ids
	}
	ids[s.ID] = leftRecord{subject: s.Who.Subject, expiry: s.Expiry}
	return true
}

// forget drops an elicitation that ended from the leftovers.
func (l *leftover) forget(s *Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ids, ok := l.m[s.Who.Session]; ok {
		delete(ids, s.ID)
		if len(ids) == 0 {
			delete(l.m, s.Who.Session)
		}
	}
}

// SessionEnded deletes what the session left pending.
func (e *Engine) SessionEnded(session string) {
	l := &e.left
	l.mu.Lock()
	ids := l.m[session]
	delete(l.m, session)
	l.mu.Unlock()
	ctx := context.Background()
	for id, r := range ids {
		s := e.Slot(Identity{Subject: r.subject, Session: session}, id, r.expiry)
		s.End(ctx)
		s.Release(ctx)
	}
}

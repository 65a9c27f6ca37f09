package engine

import (
	"sync"
	"time"
)

// localSessions is what this process knows of the sessions it serves, so
// that a blocking form (a Local slot) keeps its session's one pending
// elicitation without the store. A session that has a blocking form lives
// in this process: the form's request and the client's reply travel on the
// session's connection (stdio, in-memory, or stateful Streamable HTTP,
// whose go-sdk sessions are in this process's memory; a stateless server
// cannot send a request to its client at all). So every elicitation that
// could replace the form, or that it could replace, is asked here too.
type localSessions struct {
	mu sync.Mutex
	// forms is each session's pending blocking form.
	forms map[string]*Slot
	// stored is, for each session, the last store pointer this node wrote
	// (an elicitation that is not Local), while it may still be pending.
	stored map[string]storedPointer
}

type storedPointer struct {
	id     string
	expiry time.Time
}

// replaceForm makes s, a Local slot, its session's pending form, tells
// the form it replaces that it was superseded, and reports whether this
// node may have left a store pointer for the session pending.
func (l *localSessions) replaceForm(s *Slot, now time.Time) (stored bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.forms == nil {
		l.forms = make(map[string]*Slot)
	}
	if prev := l.forms[s.Who.Session]; prev != nil {
		prev.replaced()
	}
	l.forms[s.Who.Session] = s
	p, ok := l.stored[s.Who.Session]
	return ok && p.expiry.After(now)
}

// supersedeForm tells the session's pending form, if any, that a newer
// elicitation replaced it, and notes that this node wrote the session's
// store pointer for s.
func (l *localSessions) supersedeForm(s *Slot, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev := l.forms[s.Who.Session]; prev != nil {
		prev.replaced()
		delete(l.forms, s.Who.Session)
	}
	if l.stored == nil {
		l.stored = make(map[string]storedPointer)
	}
	if len(l.stored) >= 1024 {
		for k, p := range l.stored {
			if !p.expiry.After(now) {
				delete(l.stored, k)
			}
		}
	}
	l.stored[s.Who.Session] = storedPointer{id: s.ID, expiry: s.Expiry}
}

// replaced tells s, a pending form, that a newer elicitation replaced it;
// l.mu is held.
func (s *Slot) replaced() {
	close(s.superseded)
	if s.onSuperseded != nil {
		s.onSuperseded()
		s.onSuperseded = nil
	}
}

// watch has f called when s is replaced (Slot.OnSuperseded).
func (l *localSessions) watch(s *Slot, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-s.superseded: // nil (never replaced) blocks
		f()
	default:
		s.onSuperseded = f
	}
}

// end forgets s, which ended.
func (l *localSessions) end(s *Slot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.forms[s.Who.Session] == s {
		delete(l.forms, s.Who.Session)
	}
	if p, ok := l.stored[s.Who.Session]; ok && p.id == s.ID {
		delete(l.stored, s.Who.Session)
	}
}

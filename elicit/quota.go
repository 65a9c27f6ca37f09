package elicit

import (
	"sync"
	"time"
)

// Defaults of the pending quotas of Config.
const (
	// DefaultMaxPending bounds the elicitations pending on one Elicitor.
	DefaultMaxPending = 10000
	// DefaultMaxPendingPerSubject bounds the elicitations pending on one
	// Elicitor for one authenticated user.
	DefaultMaxPendingPerSubject = 100
)

// quota counts the elicitations this Elicitor has pending, in total and
// per authenticated subject. An elicitation is counted from the moment
// its pending record is written until this node removes it (end) or it
// expires; one resolved on another node stays counted here until its
// expiry, which errs on the side of refusing.
type quota struct {
	max, perSubject int

	mu       sync.Mutex
	pending  map[string]quotaEntry // elicitation ID → entry
	subjects map[string]int
}

type quotaEntry struct {
	subject string
	expiry  time.Time
}

func newQuota(max, perSubject int) *quota {
	if max <= 0 {
		max = DefaultMaxPending
	}
	if perSubject <= 0 {
		perSubject = DefaultMaxPendingPerSubject
	}
	return &quota{max: max, perSubject: perSubject, pending: make(map[string]quotaEntry), subjects: make(map[string]int)}
}

// acquire counts a new pending elicitation, or returns ErrTooManyPending.
// An anonymous caller ("") has only the total bound.
func (q *quota) acquire(id, subject string, expiry, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.pending[id]; ok {
		return nil
	}
	if len(q.pending) >= q.max || (subject != "" && q.subjects[subject] >= q.perSubject) {
		q.sweep(now)
	}
	if len(q.pending) >= q.max || (subject != "" && q.subjects[subject] >= q.perSubject) {
		return ErrTooManyPending
	}
	q.pending[id] = quotaEntry{subject: subject, expiry: expiry}
	if subject != "" {
		q.subjects[subject]++
	}
	return nil
}

// release stops counting an elicitation; it is a no-op for one this node
// does not count.
func (q *quota) release(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(id)
}

func (q *quota) remove(id string) {
	en, ok := q.pending[id]
	if !ok {
		return
	}
	delete(q.pending, id)
	if en.subject != "" {
		if q.subjects[en.subject]--; q.subjects[en.subject] <= 0 {
			delete(q.subjects, en.subject)
		}
	}
}

// sweep forgets the expired elicitations. q.mu is held.
func (q *quota) sweep(now time.Time) {
	for id, en := range q.pending {
		if !en.expiry.After(now) {
			q.remove(id)
		}
	}
}

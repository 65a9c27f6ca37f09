package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/store"
)

// The purposes of the records an elicitation keeps in the store. Every
// record is sealed (ring.Keyring.SealRecord) for a binding to the subject
// and the session, under a blinded key; channel names are blinded the same
// way. The strings are the record format: both front-ends write them.
const (
	PurposePending = "elicit/pending" // the elicitation: mode, schema, expiry
	PurposeResult  = "elicit/result"  // its answer, written by whoever resolves it
	PurposeSession = "elicit/session" // the session's one pending elicitation
	PurposeChannel = "elicit/channel" // announces that a result was written
	PurposeUsed    = "elicit/used"    // the one-shot marker of an LLM-mediated answer
	PurposeAnswer  = "elicit/answer"  // the fingerprint of an answer, in its marker
	PurposeReplay  = "elicit/replay"  // the result kept with a marker
)

// ViaModel is the Via of the pending record of an LLM-mediated
// elicitation, which nothing waits for.
const ViaModel = "llm"

var (
	// ErrUnknownElicitation is an elicitation that does not exist (any
	// more), or that belongs to another session or subject. It is
	// deliberately one error (elicit.ErrUnknownElicitation).
	ErrUnknownElicitation = errors.New("elicit: unknown elicitation")

	// ErrTooManyPending is an elicitation beyond a pending quota
	// (elicit.ErrTooManyPending).
	ErrTooManyPending = errors.New("elicit: too many pending elicitations")
)

// StoreError is a store that failed to answer, as opposed to a record
// that is not there or does not open: a waiter tries again.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "elicit: store: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// sessionRecord points at the session's pending elicitation.
type sessionRecord struct {
	ID     string `json:"id"`
	Expiry int64  `json:"exp"` // Unix ms
}

// Slot is one elicitation's place in the store: its records, bound to the
// call's identity and the elicitation's ID, and its channel.
type Slot struct {
	e       *Engine
	Who     Identity
	ID      string
	Expiry  time.Time
	pointer []byte // the session record this elicitation wrote

	// Local marks an elicitation that only its own call answers (a
	// blocking form: the client's reply comes back to the node that
	// asked), which therefore writes no pending record: nothing on another
	// node reads one. Its session lives in this process too, so its place
	// as the session's pending elicitation is kept here (see
	// localSessions), and the news that a newer one replaced it comes on
	// Superseded, not through the store.
	Local bool

	// NoHandedAnswer marks a waiter that could not use an answer handed
	// to it after the store lost the records (a held 2026-07-28 round,
	// whose requestState's claim went with the store): WaitLocal does not
	// register it, so no page says "Done" for it.
	NoHandedAnswer bool

	superseded   chan struct{} // a Local slot's; closed when replaced
	onSuperseded func()        // called when replaced; under localSessions.mu
}

// Superseded is closed when a newer elicitation of the session replaced
// this Local slot, once Begin or Claim made it the session's pending one;
// nil otherwise.
func (s *Slot) Superseded() <-chan struct{} { return s.superseded }

// OnSuperseded has f called, once, when a newer elicitation of the
// session replaces this Local slot (at once if one already did): the
// replacing call runs it, so f must be quick and must not block (a
// context's cancel). Unlike a receive on Superseded, it needs no goroutine.
func (s *Slot) OnSuperseded(f func()) { s.e.local.watch(s, f) }

// Slot returns the place of elicitation id of the call who.
func (e *Engine) Slot(who Identity, id string, expiry time.Time) *Slot {
	return &Slot{e: e, Who: who, ID: id, Expiry: expiry}
}

// Binding is the binding of the slot's record for purpose.
func (s *Slot) Binding(purpose string) envelope.Binding {
	b := s.Who.Binding(purpose, s.ID)
	if purpose == PurposeSession {
		b.RecordID = ""
	}
	return b
}

// Key is the blinded store key of the slot's record for purpose, under
// the primary secret.
func (s *Slot) Key(purpose string) string { return s.e.keys.StoreKey(s.Binding(purpose)) }

// Channel is the blinded name of the elicitation's channel, which its
// waiter listens on: under the waiter's primary secret.
func (s *Slot) Channel() string { return "ev:" + s.Key(PurposeChannel) }

// Publish announces a result on the elicitation's channel under every
// secret of the keyring: during a rotation the waiter's primary may be
// another than this node's.
func (s *Slot) Publish(ctx context.Context) {
	for _, key := range s.e.keys.StoreKeys(s.Binding(PurposeChannel)) {
		s.e.store.Publish(ctx, "ev:"+key, []byte{1})
	}
}

// Taken announces on the elicitation's channel that its call took the
// answer, for the page that wrote it, which waits for this (IsTaken)
// before it tells the user that they are done. Best effort, under every
// secret of the keyring, like Publish.
func (s *Slot) Taken(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, key := range s.e.keys.StoreKeys(s.Binding(PurposeChannel)) {
		s.e.store.Publish(ctx, "ev:"+key, takenMessage)
	}
}

// takenMessage is Taken's message; Publish's is one byte 1.
var takenMessage = []byte{2}

// IsTaken reports whether m is the announcement of Taken.
func IsTaken(m store.Message) bool {
	return len(m.Data) == 1 && m.Data[0] == takenMessage[0]
}

// Begin subscribes to the elicitation's channel, writes its pending
// record (see PutPending), makes it the session's pending elicitation and
// cancels the one it replaces. The caller must call End. A Local slot
// subscribes to nothing (its subscription is nil: see Superseded).
func (s *Slot) Begin(ctx context.Context, pending []byte, clientID string) (store.Subscription, error) {
	if s.Local {
		return nil, beginLocalSized(ctx, s, len(pending), clientID)
	}
	sub, err := s.e.store.Subscribe(ctx, s.Channel())
	if err != nil {
		return nil, fmt.Errorf("elicit: subscribe: %w", err)
	}
	if err := s.PutPending(ctx, pending, clientID); err != nil {
		sub.Close()
		return nil, err
	}
	if err := s.Claim(ctx); err != nil {
		sub.Close()
		s.End(ctx)
		return nil, err
	}
	return sub, nil
}

// PutPending counts the elicitation against the engine's quotas, for the
// call's client (Identity.Client of clientID) and in bytes, and writes
// pending, the JSON encoding of its pending record (none for a Local
// slot).
func (s *Slot) PutPending(ctx context.Context, pending []byte, clientID string) error {
	if err := s.e.quota.acquire(ctx, s, s.Who.Client(clientID), len(pending)); err != nil {
		return err
	}
	if s.Local {
		return nil
	}
	if err := s.PutJSON(ctx, PurposePending, pending); err != nil {
		s.e.quota.release(s.ID)
		return err
	}
	s.e.quota.written(s.ID)
	return nil
}

// Claim makes the elicitation the session's pending one and cancels the
// one it replaces. Without a session there is nothing to share: it does
// nothing.
func (s *Slot) Claim(ctx context.Context) error {
	if !s.Who.HasSession() {
		return nil
	}
	if s.Local {
		s.superseded = make(chan struct{})
		if !s.e.local.replaceForm(s, s.e.Now()) {
			return nil // nothing of the session's is in the store
		}
		// An elicitation this node asked through the store may still be
		// pending: replace it there too.
	} else {
		s.e.local.supersedeForm(s, s.e.Now())
	}
	ptr, _ := json.Marshal(sessionRecord{ID: s.ID, Expiry: s.Expiry.UnixMilli()})
	sealed, err := s.e.keys.SealRecord(s.Binding(PurposeSession), ptr, s.Expiry)
	if err != nil {
		return err
	}
	s.pointer = sealed
	old, err := s.e.store.Swap(ctx, s.Key(PurposeSession), sealed, s.Expiry)
	if err != nil {
		return fmt.Errorf("elicit: store: %w", err)
	}
	if old != nil {
		s.supersede(ctx, old)
	}
	return nil
}

// Release removes the session's pointer if it still points at this
// elicitation, from any node (which does not hold the pointer's bytes).
func (s *Slot) Release(ctx context.Context) {
	if !s.Who.HasSession() {
		return
	}
	b := s.Binding(PurposeSession)
	for _, key := range s.e.keys.StoreKeys(b) {
		old, err := s.e.store.Get(ctx, key)
		if err != nil {
			continue
		}
		pt, err := s.e.keys.OpenRecord(b, old)
		var ptr sessionRecord
		if err != nil || json.Unmarshal(pt, &ptr) != nil || ptr.ID != s.ID {
			continue
		}
		s.e.store.CompareAndSwap(ctx, key, old, nil, time.UnixMilli(ptr.Expiry))
	}
}

// supersede tells the elicitation the session record old points at that
// it was replaced: the result first, then the announcement. An
// LLM-mediated one, which nothing waits for, is simply removed.
func (s *Slot) supersede(ctx context.Context, old []byte) {
	pt, err := s.e.keys.OpenRecord(s.Binding(PurposeSession), old)
	if err != nil {
		return // expired or foreign: nothing waits on it here
	}
	var ptr sessionRecord
	if json.Unmarshal(pt, &ptr) != nil || ptr.ID == "" || ptr.ID == s.ID {
		return
	}
	prev := s.e.Slot(s.Who, ptr.ID, time.UnixMilli(ptr.Expiry))
	if !prev.Expiry.After(s.e.Now()) {
		return
	}
	var rec struct {
		Via string `json:"via,omitempty"`
	}
	if prev.Get(ctx, PurposePending, &rec) == nil && rec.Via == ViaModel {
		prev.End(ctx)
		return
	}
	superseded := struct {
		Superseded bool `json:"superseded"`
	}{true}
	if prev.Put(ctx, PurposeResult, &superseded) == nil {
		prev.Publish(ctx)
	}
}

// Put seals v for purpose and writes it until the slot's expiry.
func (s *Slot) Put(ctx context.Context, purpose string, v any) error {
	pt, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	return s.PutJSON(ctx, purpose, pt)
}

// PutJSON seals pt, a JSON encoding, for purpose and writes it until the
// slot's expiry.
func (s *Slot) PutJSON(ctx context.Context, purpose string, pt []byte) error {
	sealed, err := s.e.keys.SealRecord(s.Binding(purpose), pt, s.Expiry)
	if err != nil {
		return err
	}
	if err := s.e.store.Put(ctx, s.Key(purpose), sealed, s.Expiry); err != nil {
		return fmt.Errorf("elicit: store: %w", err)
	}
	return nil
}

// Get reads and opens the record for purpose, trying every secret's key.
// It returns ErrUnknownElicitation when there is none that opens; a store
// that fails is a *StoreError. Nothing of an answer is consumed by reading
// it (issue 26): the slot's end removes it.
func (s *Slot) Get(ctx context.Context, purpose string, v any) error {
	rec, err := s.e.keys.Lookup(ctx, s.e.store, s.Binding(purpose))
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownElicitation
	}
	if err != nil {
		return &StoreError{err}
	}
	return s.open(purpose, rec, v)
}

func (s *Slot) open(purpose string, rec []byte, v any) error {
	pt, err := s.e.keys.OpenRecord(s.Binding(purpose), rec)
	if err != nil {
		// Forged, misplaced, expired or under a dropped secret: to the
		// caller it is all the same, there is no such elicitation.
		return ErrUnknownElicitation
	}
	if err := json.Unmarshal(pt, v); err != nil {
		return ErrUnknownElicitation
	}
	return nil
}

// End removes everything the elicitation wrote, leaving the session's
// pointer alone if a newer elicitation has replaced it, and stops counting
// it. It runs even when ctx is done.
func (s *Slot) End(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.e.quota.release(s.ID)
	s.e.left.forget(s)
	s.e.local.end(s)
	if s.pointer != nil {
		s.e.store.CompareAndSwap(ctx, s.Key(PurposeSession), s.pointer, nil, s.Expiry)
	}
	purposes := []string{PurposePending, PurposeResult}
	switch {
	case s.Local && s.pointer == nil:
		return // it wrote nothing, and nothing in the store names it
	case s.Local:
		purposes = purposes[1:] // a result: a newer elicitation replaced it there
	}
	for _, p := range purposes {
		for _, key := range s.e.keys.StoreKeys(s.Binding(p)) {
			s.e.store.Delete(ctx, key)
		}
	}
}

// Resolve writes res, an answer for the elicitation (its result record),
// and announces it. The caller has validated it against the pending
// record.
func (s *Slot) Resolve(ctx context.Context, res any) error {
	if err := s.Put(ctx, PurposeResult, res); err != nil {
		return err
	}
	// Best effort: a lost message is found by the waiter's next read.
	s.Publish(ctx)
	return nil
}

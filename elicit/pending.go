package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/store"
)

// The purposes of the records the flow keeps in the store. Every record is
// sealed (ring.Keyring.SealRecord) for a binding to the subject and the
// session, under a blinded key; channel names are blinded the same way.
const (
	purposePending = "elicit/pending" // the elicitation: mode, schema, expiry
	purposeResult  = "elicit/result"  // its answer, written by whoever resolves it
	purposeSession = "elicit/session" // the session's one pending elicitation
	purposeChannel = "elicit/channel" // announces that a result was written
	purposeUsed    = "elicit/used"    // the one-shot marker of an LLM-mediated answer
	purposeAnswer  = "elicit/answer"  // the fingerprint of an answer, in its marker
	purposeReplay  = "elicit/replay"  // the result kept with a marker
)

// How an elicitation reaches the user, in its pending record, when it is
// not the client's own elicitation.
const (
	viaModel   = "llm"
	viaBrowser = "browser"
)

// pendingRecord is the sealed state of an elicitation in progress.
type pendingRecord struct {
	Mode   Mode            `json:"mode"`
	Via    string          `json:"via,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	Expiry int64           `json:"exp"` // Unix ms

	// An LLM-mediated elicitation carries what continuing the call needs:
	// the question (its fingerprint), the tool's arguments, the answers
	// of the earlier runs and the handler's state. Nothing waits for it.
	FP      string          `json:"fp,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Answers []answered      `json:"answers,omitempty"`
	State   []byte          `json:"state,omitempty"`
	// Marker is the key ID of the primary secret when the elicitation was
	// asked: its answer's one-shot marker is blinded under that secret, so
	// that every node agrees on the marker's key during a rotation, as
	// token markers do (a rewrap keeps this field).
	Marker string `json:"mk,omitempty"`
	// Done, for a URL-mode elicitation whose call does not wait for it
	// (-32042), is the fingerprint under
	// which the page leaves the answer for the call's retry.
	Done string `json:"done,omitempty"`
	// Carried is what the hooks' Carry returned when the elicitation was
	// asked (a trace context), for the node that resumes it.
	Carried map[string]string `json:"tc,omitempty"`
}

// resultRecord is an answer, as the resolver wrote it: validated content,
// or the news that a newer elicitation replaced this one.
type resultRecord struct {
	Action     Action         `json:"action,omitempty"`
	Content    map[string]any `json:"content,omitempty"`
	Superseded bool           `json:"superseded,omitempty"`
	// ID and Expiry, in the answer a page leaves for the retry of a
	// -32042 call, name the elicitation it answers, whose one-shot marker
	// the retry claims, and when it ends (Unix ms).
	ID     string `json:"id,omitempty"`
	Expiry int64  `json:"exp,omitempty"`
}

// sessionRecord points at the session's pending elicitation.
type sessionRecord struct {
	ID     string `json:"id"`
	Expiry int64  `json:"exp"` // Unix ms
}

// slot is one elicitation's place in the store.
type slot struct {
	e                    *Elicitor
	subject, session, id string
	expiry               time.Time
	pointer              []byte // the session record this elicitation wrote

	// local marks an elicitation that only its own call answers (a
	// blocking form: the client's reply comes back to the node that
	// asked), which therefore writes no pending record: nothing on another
	// node reads one.
	local bool
}

func (e *Elicitor) slot(subject, session, id string, expiry time.Time) *slot {
	return &slot{e: e, subject: subject, session: session, id: id, expiry: expiry}
}

func (s *slot) binding(purpose string) envelope.Binding {
	b := envelope.Binding{Purpose: purpose, Subject: s.subject, SessionID: s.session, RecordID: s.id}
	if purpose == purposeSession {
		b.RecordID = ""
	}
	return b
}

func (s *slot) key(purpose string) string { return s.e.keys.StoreKey(s.binding(purpose)) }

// channel is the blinded name of the elicitation's channel, which its
// waiter listens on: under the waiter's primary secret.
func (s *slot) channel() string { return "ev:" + s.key(purposeChannel) }

// publish announces a result on the elicitation's channel under every
// secret of the keyring: during a rotation the waiter's primary may be
// another than this node's.
func (s *slot) publish(ctx context.Context) {
	for _, key := range s.e.keys.StoreKeys(s.binding(purposeChannel)) {
		s.e.store.Publish(ctx, "ev:"+key, []byte{1})
	}
}

// begin subscribes to the elicitation's channel, writes its pending record,
// makes it the session's pending elicitation and cancels the one it
// replaces. The caller must call end.
func (s *slot) begin(ctx context.Context, rec *pendingRecord) (store.Subscription, error) {
	sub, err := s.e.store.Subscribe(ctx, s.channel())
	if err != nil {
		return nil, fmt.Errorf("elicit: subscribe: %w", err)
	}
	if err := s.putPending(ctx, rec); err != nil {
		sub.Close()
		return nil, err
	}
	if err := s.claim(ctx); err != nil {
		sub.Close()
		s.end(ctx)
		return nil, err
	}
	return sub, nil
}

// putPending counts the elicitation against the Elicitor's quotas, for
// the client of ctx (see clientOf) and in bytes, and writes its pending
// record.
func (s *slot) putPending(ctx context.Context, rec *pendingRecord) error {
	if rec.Carried == nil {
		rec.Carried = carry(ctx, s.e.hooks)
	}
	b, err := json.Marshal(rec)
	if err != nil || len(b) > s.e.maxPendingSize {
		// The tool's arguments, earlier answers and state are the
		// client's to size: they are not parked in the store unbounded.
		return ErrTooLarge
	}
	if err := s.e.quota.acquire(ctx, s, s.clientOf(ctx), len(b)); err != nil {
		return err
	}
	if s.local {
		return nil
	}
	if err := s.putJSON(ctx, purposePending, b); err != nil {
		s.e.quota.release(s.id)
		return err
	}
	return nil
}

// realSession reports whether the slot's session is one: a transport
// session or a connection (stdio, in-memory). Without one (stateless
// HTTP), elicitations of different clients, or of one user's parallel
// chats, share nothing: each is keyed by its own ID only.
func (s *slot) realSession() bool { return s.session != sessionless }

// claim makes the elicitation the session's pending one and cancels the
// one it replaces. Without a real session there is nothing to share: it
// does nothing.
func (s *slot) claim(ctx context.Context) error {
	if !s.realSession() {
		return nil
	}
	ptr, _ := json.Marshal(sessionRecord{ID: s.id, Expiry: s.expiry.UnixMilli()})
	sealed, err := s.e.keys.SealRecord(s.binding(purposeSession), ptr, s.expiry)
	if err != nil {
		return err
	}
	s.pointer = sealed
	old, err := s.e.store.Swap(ctx, s.key(purposeSession), sealed, s.expiry)
	if err != nil {
		return fmt.Errorf("elicit: store: %w", err)
	}
	if old != nil {
		s.supersede(ctx, old)
	}
	return nil
}

// release removes the session's pointer if it still points at this
// elicitation, from any node (which does not hold the pointer's bytes).
func (s *slot) release(ctx context.Context) {
	if !s.realSession() {
		return
	}
	b := s.binding(purposeSession)
	for _, key := range s.e.keys.StoreKeys(b) {
		old, err := s.e.store.Get(ctx, key)
		if err != nil {
			continue
		}
		pt, err := s.e.keys.OpenRecord(b, old)
		var ptr sessionRecord
		if err != nil || json.Unmarshal(pt, &ptr) != nil || ptr.ID != s.id {
			continue
		}
		s.e.store.CompareAndSwap(ctx, key, old, nil, time.UnixMilli(ptr.Expiry))
	}
}

// supersede tells the elicitation the session record old points at that
// it was replaced: the result first, then the announcement. An
// LLM-mediated one, which nothing waits for, is simply removed.
func (s *slot) supersede(ctx context.Context, old []byte) {
	pt, err := s.e.keys.OpenRecord(s.binding(purposeSession), old)
	if err != nil {
		return // expired or foreign: nothing waits on it here
	}
	var ptr sessionRecord
	if json.Unmarshal(pt, &ptr) != nil || ptr.ID == "" || ptr.ID == s.id {
		return
	}
	prev := s.e.slot(s.subject, s.session, ptr.ID, time.UnixMilli(ptr.Expiry))
	if !prev.expiry.After(s.e.now()) {
		return
	}
	var rec pendingRecord
	if prev.get(ctx, purposePending, &rec) == nil && rec.Via == viaModel {
		prev.end(ctx)
		return
	}
	if prev.put(ctx, purposeResult, &resultRecord{Superseded: true}) == nil {
		prev.publish(ctx)
	}
}

// put seals v for purpose and writes it until the slot's expiry.
func (s *slot) put(ctx context.Context, purpose string, v any) error {
	pt, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	return s.putJSON(ctx, purpose, pt)
}

// putJSON seals pt, a JSON encoding, for purpose and writes it until the
// slot's expiry.
func (s *slot) putJSON(ctx context.Context, purpose string, pt []byte) error {
	sealed, err := s.e.keys.SealRecord(s.binding(purpose), pt, s.expiry)
	if err != nil {
		return err
	}
	if err := s.e.store.Put(ctx, s.key(purpose), sealed, s.expiry); err != nil {
		return fmt.Errorf("elicit: store: %w", err)
	}
	return nil
}

// get reads and opens the record for purpose, trying every secret's key.
// It returns ErrUnknownElicitation when there is none that opens.
func (s *slot) get(ctx context.Context, purpose string, v any) error {
	rec, err := s.e.keys.Lookup(ctx, s.e.store, s.binding(purpose))
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownElicitation
	}
	if err != nil {
		return &storeError{err}
	}
	return s.open(purpose, rec, v)
}

// storeError is a store that failed to answer, as opposed to a record that
// is not there or does not open: a waiter tries again.
type storeError struct{ err error }

func (e *storeError) Error() string { return "elicit: store: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func (s *slot) open(purpose string, rec []byte, v any) error {
	pt, err := s.e.keys.OpenRecord(s.binding(purpose), rec)
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

// end removes everything the elicitation wrote, leaving the session's
// pointer alone if a newer elicitation has replaced it. It runs even when
// ctx is done.
func (s *slot) end(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.e.quota.release(s.id)
	s.e.forget(s)
	if s.pointer != nil {
		s.e.store.CompareAndSwap(ctx, s.key(purposeSession), s.pointer, nil, s.expiry)
	}
	purposes := []string{purposePending, purposeResult}
	if s.local {
		purposes = purposes[1:]
	}
	for _, p := range purposes {
		for _, key := range s.e.keys.StoreKeys(s.binding(p)) {
			s.e.store.Delete(ctx, key)
		}
	}
}

// resolve writes an answer for the elicitation and announces it. The
// caller has validated it against the pending record.
func (s *slot) resolve(ctx context.Context, res *resultRecord) error {
	if err := s.put(ctx, purposeResult, res); err != nil {
		return err
	}
	// Best effort: a lost message is found by the waiter's next read.
	s.publish(ctx)
	return nil
}

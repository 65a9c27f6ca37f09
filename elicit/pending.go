package elicit

import (
	"context"
	"encoding/json"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/store"
)

// How an elicitation reaches the user, in its pending record, when it is
// not the client's own elicitation.
const (
	viaModel   = engine.ViaModel
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

// resultRecord is an answer, as the resolver wrote it (engine.Result).
type resultRecord = engine.Result

// encodePending encodes rec, with what the hooks carry (a trace context)
// when rec carries nothing yet, refusing one larger than
// Config.MaxPendingSize with ErrTooLarge.
func (e *Elicitor) encodePending(ctx context.Context, rec *pendingRecord) ([]byte, error) {
	if rec.Carried == nil {
		rec.Carried = carry(ctx, e.hooks)
	}
	b, err := json.Marshal(rec)
	if err != nil || len(b) > e.maxPendingSize {
		// The tool's arguments, earlier answers and state are the
		// client's to size: they are not parked in the store unbounded.
		return nil, ErrTooLarge
	}
	return b, nil
}

// begin writes rec, the pending record of the elicitation of s, counted
// for the client of ctx (contextWithClientID), and subscribes to its channel
// (engine.Slot.Begin). The caller must end s.
func (e *Elicitor) begin(ctx context.Context, s *engine.Slot, rec *pendingRecord) (store.Subscription, error) {
	b, err := e.encodePending(ctx, rec)
	if err != nil {
		return nil, err
	}
	return s.Begin(ctx, b, clientID(ctx))
}

// putPending writes rec, the pending record of the elicitation of s,
// counted for the client of ctx (engine.Slot.PutPending).
func (e *Elicitor) putPending(ctx context.Context, s *engine.Slot, rec *pendingRecord) error {
	b, err := e.encodePending(ctx, rec)
	if err != nil {
		return err
	}
	return s.PutPending(ctx, b, clientID(ctx))
}

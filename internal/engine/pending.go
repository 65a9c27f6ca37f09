package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
)

// viaBrowser is the Via of the pending record of a BrowserForm
// elicitation.
const viaBrowser = "browser"

// pendingRecord is the sealed state of an elicitation in progress.
type pendingRecord struct {
	Mode   string          `json:"mode"`
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
	// Message, for URL mode, is the elicitation's message, which the
	// consent page shows (sealed here, never in the link), and Server the
	// name the page gives the server that asks (Config.ServerName).
	Message string `json:"msg,omitempty"`
	Server  string `json:"srv,omitempty"`
}

// urlPending is the pending record of the URL-mode elicitation q, until
// expiry: with what the consent page shows.
func urlPending(e *Engine, q *Ask, expiry time.Time) *pendingRecord {
	return &pendingRecord{Mode: ModeURL, Tool: q.info.Tool, Expiry: expiry.UnixMilli(), Message: q.Message, Server: e.cfg.ServerName}
}

// Consent is what the consent page of a URL-mode link shows: the
// elicitation's message and the name of the server that asked ("" when
// its pending record has none).
type Consent struct {
	Message, Server string
}

// URLConsent reads what the consent page of the link with verified claims
// c shows, from the elicitation's sealed pending record in e's store
// (which opens only for the token's subject and session). One that is no
// longer pending is an error matching ErrUnknownElicitation; a store that
// fails is a *StoreError. (A function, not a method: Engine has its
// share of methods.)
func URLConsent(ctx context.Context, e *Engine, c *token.Claims) (*Consent, error) {
	var rec pendingRecord
	if err := e.Slot(ClaimsIdentity(c), c.ElicitationID, time.Time{}).Get(ctx, PurposePending, &rec); err != nil {
		return nil, err
	}
	if rec.Mode != ModeURL || !time.UnixMilli(rec.Expiry).After(e.Now()) {
		return nil, ErrUnknownElicitation
	}
	return &Consent{Message: rec.Message, Server: rec.Server}, nil
}

// encodePending encodes rec, with what the hooks carry (a trace context)
// when rec carries nothing yet, refusing one larger than
// Config.MaxPendingSize with ErrTooLarge.
func encodePending(ctx context.Context, e *Engine, rec *pendingRecord) ([]byte, error) {
	if rec.Carried == nil {
		rec.Carried = e.cfg.carry(ctx)
	}
	b, err := json.Marshal(rec)
	if err != nil || len(b) > e.cfg.MaxPendingSize {
		// The tool's arguments, earlier answers and state are the
		// client's to size: they are not parked in the store unbounded.
		return nil, ErrTooLarge
	}
	return b, nil
}

// beginPending writes rec, the pending record of the elicitation of s,
// counted for the client of ctx (WithClientID), and subscribes to its
// channel (Slot.Begin). The caller must end s.
func beginPending(ctx context.Context, e *Engine, s *Slot, rec *pendingRecord) (store.Subscription, error) {
	b, err := encodePending(ctx, e, rec)
	if err != nil {
		return nil, err
	}
	return s.Begin(ctx, b, ClientID(ctx))
}

// beginLocal counts rec, the pending record of the blocking form of s (a
// Local slot), which is never written, and makes it the session's pending
// elicitation. Its size is reckoned, not encoded: the
// JSON of a form's record is its schema, its tool's name and some 50 bytes
// of names and expiry. The caller must end s.
func beginLocal(ctx context.Context, e *Engine, s *Slot, rec *pendingRecord) error {
	size := localRecordOverhead + len(rec.Mode) + len(rec.Schema) + len(rec.Tool)
	if size > e.cfg.MaxPendingSize {
		return ErrTooLarge
	}
	return beginLocalSized(ctx, s, size, ClientID(ctx))
}

// beginLocalSized is Slot.Begin for a Local slot, whose pending record is
// never written: it counts the elicitation as size bytes (what its record
// would take) and makes it the session's pending one.
func beginLocalSized(ctx context.Context, s *Slot, size int, clientID string) error {
	if err := s.e.quota.acquire(ctx, s, s.Who.Client(clientID), size); err != nil {
		return err
	}
	if err := s.Claim(ctx); err != nil {
		s.End(ctx)
		return err
	}
	return nil
}

// localRecordOverhead is the JSON of a form's pending record without its
// mode, schema and tool: {"mode":"","schema":,"tool":"","exp":} and 13
// digits of expiry.
const localRecordOverhead = len(`{"mode":"","schema":,"tool":"","exp":}`) + 13

// putPending writes rec, the pending record of the elicitation of s,
// counted for the client of ctx (Slot.PutPending).
func putPending(ctx context.Context, e *Engine, s *Slot, rec *pendingRecord) error {
	b, err := encodePending(ctx, e, rec)
	if err != nil {
		return err
	}
	return s.PutPending(ctx, b, ClientID(ctx))
}

type clientIDKey struct{}

// WithClientID returns ctx carrying id, the identity of the client of an
// unauthenticated request on a stateless server, which the pending quotas
// count per client (Identity.Client).
func WithClientID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientIDKey{}, id)
}

// ClientID is the client ID ctx carries (WithClientID), or "".
func ClientID(ctx context.Context) string {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return id
}

// pendURL writes the pending record of the URL-mode elicitation q, which
// nothing waits for on this node: its callback may arrive on any node, and
// the record is what it resolves. It returns the link to send and the
// elicitation's slot, which the caller ends or leaves (LeaveFor).
func pendURL(ctx context.Context, e *Engine, q *Ask) (link string, s *Slot, err error) {
	if err := q.bind(ctx); err != nil {
		return "", nil, err
	}
	expiry := e.Now().Add(q.TTL)
	if link, err = issueURL(e, q); err != nil {
		return "", nil, err
	}
	s = e.Slot(q.info.Who, q.ID, expiry)
	if err := putPending(ctx, e, s, urlPending(e, q, expiry)); err != nil {
		return "", nil, err
	}
	return link, s, nil
}

// bind binds q, once, to the call ctx carries (PeerFrom):
// ErrNotInstalled without one.
func (q *Ask) bind(ctx context.Context) error {
	if q.peer != nil {
		return nil // bound already, by Deliver
	}
	p := PeerFrom(ctx)
	if p == nil {
		return ErrNotInstalled
	}
	q.peer, q.info = p, p.Call()
	return nil
}

// InputKey is the key of the input request of q: Ask.Key, else one
// derived from its ID.
func (q *Ask) InputKey() string {
	if q.Key != "" {
		return q.Key
	}
	return "elicit-" + q.ID[:8]
}

// Params are the params of the elicitation request of q, without a URL.
func (q *Ask) Params() *ElicitParams {
	p := &ElicitParams{Mode: q.Mode, Message: q.Message}
	if q.Mode == ModeForm {
		p.RequestedSchema = q.Schema
	}
	return p
}

// issueURL issues the callback token of q and returns the link to send.
func issueURL(e *Engine, q *Ask) (string, error) {
	ttl := q.TTL
	if ttl < time.Second {
		ttl = time.Second
	}
	tok, err := e.tokens.Issue(&token.Claims{
		Kind:          token.URL,
		SessionID:     q.info.Who.Session,
		Subject:       q.info.Who.Subject,
		ElicitationID: q.ID,
	}, ttl.Round(time.Second), token.Compact)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	return q.Link(tok), nil
}

// notifyComplete sends notifications/elicitation/complete, best effort.
// With the context of a tool call in progress, it goes to the client with
// that call's messages (its stream, on Streamable HTTP).
func notifyComplete(ctx context.Context, p Peer, id string) {
	p.NotifyComplete(context.WithoutCancel(ctx), id)
}

// notifyCompleteLater is notifyComplete after the tool call ended (the
// -32042 watcher). Its context must not be the call's: the go-sdk would
// send it on the call's stream, closed by now, and drop it; a fresh
// context sends it on the session's standalone stream.
func notifyCompleteLater(p Peer, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.NotifyComplete(ctx, id)
}

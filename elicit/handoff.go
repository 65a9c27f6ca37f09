package elicit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/token"
)

// A handoff carries the answer of a URL-mode page to the call waiting for
// it on another node when the store lost the elicitation's records (issue
// 24): the page, whose token verified, publishes the answer sealed on the
// elicitation's channel; the node whose call waits there takes it (its
// waiter takes one answer, which keeps the delivery one-shot) and answers
// with a sealed acknowledgement on a channel of its own. The page says
// "Done" only on that acknowledgement: an answer nobody took is never
// reported as taken.
//
// The store carries both messages and reads neither: they are sealed
// records bound to the elicitation (its call's identity and ID) and to
// their purpose. A message replayed from the store reaches the same
// waiter, which has taken its one answer already.
const (
	purposeHandoff    = "elicit/handoff"
	purposeHandoffAck = "elicit/handoff-ack"
)

// handoffWait bounds how long a page waits for a waiting call to take its
// answer.
const handoffWait = 2 * time.Second

type handoffMsg struct {
	Action Action `json:"action"`
	Nonce  []byte `json:"nonce"`
}

// handoff offers action, the verified answer of the page of claims c, to
// the call waiting for it on any node, and reports whether one took it.
func (e *Elicitor) handoff(ctx context.Context, c *token.Claims, action Action) bool {
	s := e.slot(engine.ClaimsIdentity(c), c.ElicitationID, time.Time{})
	ctx, cancel := context.WithTimeout(ctx, handoffWait)
	defer cancel()
	acks, err := e.store.Subscribe(ctx, "ev:"+e.keys.StoreKey(s.Binding(purposeHandoffAck)))
	if err != nil {
		return false
	}
	defer acks.Close()
	m := handoffMsg{Action: action, Nonce: make([]byte, 16)}
	rand.Read(m.Nonce)
	if !e.publishSealed(ctx, s, purposeHandoff, &m) {
		return false
	}
	for {
		select {
		case msg, ok := <-acks.Messages():
			if !ok {
				return false
			}
			var ack handoffMsg
			if e.openSealed(s, purposeHandoffAck, msg.Data, &ack) && bytes.Equal(ack.Nonce, m.Nonce) {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// taker registers the call of ctx waiting for s as one that takes an
// answer handed to it (waiters), unless it continues a 2026-07-28 round
// whose requestState it has still to use up: after the store lost its
// records, the claim on it is lost too, and the round could neither use the
// answer nor be sent again, so the page must not say "Done".
func (e *Elicitor) taker(ctx context.Context, s *engine.Slot) (<-chan *Response, func()) {
	if rd, ok := ctx.Value(roundKey{}).(*round); ok && rd.use != nil && !rd.delivered {
		return nil, func() {}
	}
	return e.waiting.wait(s)
}

// takeHandoff hands the answer in data, a message on the channel of s,
// to the call of this node waiting for s, if data is a handoff for s and
// the call is still waiting, and acknowledges it to the page.
func (e *Elicitor) takeHandoff(ctx context.Context, s *engine.Slot, data []byte) {
	if len(data) < 2 { // the announcement of a result written to the store
		return
	}
	var m handoffMsg
	if !e.openSealed(s, purposeHandoff, data, &m) || (m.Action != Accept && m.Action != Decline) {
		return
	}
	if !e.waiting.deliverTo(s.Who, s.ID, m.Action) {
		return
	}
	e.publishSealed(ctx, s, purposeHandoffAck, &handoffMsg{Nonce: m.Nonce})
}

// publishSealed publishes v, sealed for purpose and s, on the channel of
// s for purpose under every secret of the keyring (see engine.Slot's
// Publish), and reports whether one publication went out.
func (e *Elicitor) publishSealed(ctx context.Context, s *engine.Slot, purpose string, v any) bool {
	pt, err := json.Marshal(v)
	if err != nil {
		return false
	}
	sealed, err := e.keys.SealRecord(s.Binding(purpose), pt, e.now().Add(time.Minute))
	if err != nil {
		return false
	}
	channel := s.Binding(engine.PurposeChannel)
	if purpose == purposeHandoffAck {
		channel = s.Binding(purposeHandoffAck)
	}
	sent := false
	for _, key := range e.keys.StoreKeys(channel) {
		if e.store.Publish(ctx, "ev:"+key, sealed) == nil {
			sent = true
		}
	}
	return sent
}

func (e *Elicitor) openSealed(s *engine.Slot, purpose string, data []byte, v any) bool {
	pt, err := e.keys.OpenRecord(s.Binding(purpose), data)
	return err == nil && json.Unmarshal(pt, v) == nil
}

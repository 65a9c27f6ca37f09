package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/elicitvault/elicitvault/internal/token"
)

// A handoff carries the answer of a URL-mode page to the call waiting for
// it on another node when the store lost the elicitation's records (issue
// 24): the page, whose token verified, publishes the answer sealed on the
// elicitation's channel; the node whose call waits there takes it (its
// waiter takes one answer, which keeps the delivery one-shot) and
// announces Taken. The page says "Done" only then: an answer no call took
// is never reported as taken.
//
// The store carries the answer and reads nothing of it: it is a sealed
// record bound to the elicitation (its call's identity and ID) and to its
// purpose. A message replayed from the store reaches the same waiter,
// which has taken its one answer already.
const purposeHandoff = "elicit/handoff"

type handoffMsg struct {
	Action string `json:"action"`
}

// Handoff offers action, the verified answer of the page of claims c, to
// the call waiting for it: on this node first, then on any node, and
// reports whether one took it within wait.
func (e *Engine) Handoff(ctx context.Context, c *token.Claims, action string, wait time.Duration) bool {
	if e.waiting.deliver(ClaimsIdentity(c), c.ElicitationID, action) {
		return true
	}
	s := e.Slot(ClaimsIdentity(c), c.ElicitationID, time.Time{})
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sub, err := e.store.Subscribe(ctx, s.Channel())
	if err != nil {
		return false
	}
	defer sub.Close()
	pt, err := json.Marshal(handoffMsg{Action: action})
	if err != nil {
		return false
	}
	sealed, err := e.keys.SealRecord(s.Binding(purposeHandoff), pt, e.Now().Add(time.Minute))
	if err != nil {
		return false
	}
	sent := false
	for _, key := range e.keys.StoreKeys(s.Binding(PurposeChannel)) {
		if e.store.Publish(ctx, "ev:"+key, sealed) == nil {
			sent = true
		}
	}
	for sent {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				return false
			}
			if IsTaken(m) {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
	return false
}

// TakeHandoff hands the answer in data, a message on the channel of s, to
// the call of this node waiting for s (WaitLocal), if data is a handoff
// for s and the call still waits, and announces Taken for the page.
func (s *Slot) TakeHandoff(data []byte) {
	if len(data) < 2 { // Publish's or Taken's one byte
		return
	}
	pt, err := s.e.keys.OpenRecord(s.Binding(purposeHandoff), data)
	if err != nil {
		return
	}
	var m handoffMsg
	if json.Unmarshal(pt, &m) != nil || (m.Action != "accept" && m.Action != "decline") {
		return
	}
	if s.e.waiting.deliver(s.Who, s.ID, m.Action) {
		// The call has it (a -32042 call's wait keeps it for the retry).
		s.Taken(context.Background())
	}
}

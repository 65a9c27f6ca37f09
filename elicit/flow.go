package elicit

import (
	"context"
	"encoding/json"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/token"
)

// flow is the Elicitor as its engine's engine.Flow: the part of every
// elicitation that speaks this package's vocabulary. The engine calls it
// for the front-ends (engine.Engine.Begin, Answer, ...); elicit.New wires
// it, once.
type flow Elicitor

// EndURL ends URL-mode elicitations for callbacks that are not the
// Elicitor's own pages (package elicit/oauth's). Accept completes one,
// Decline and Cancel end it with the user's refusal.
func (f *flow) EndURL(ctx context.Context, c *token.Claims, action string) error {
	return (*Elicitor)(f).resolveURL(ctx, c, Action(action))
}

// Prepare puts the Elicitor in ctx, for Form, Confirm and URL.
func (f *flow) Prepare(ctx context.Context) context.Context {
	return context.WithValue(ctx, elicitorKey{}, (*Elicitor)(f))
}

func (f *flow) Open(ctx context.Context, p engine.Peer, state string, responses map[string]json.RawMessage) (engine.Round, error) {
	rd, err := (*Elicitor)(f).input.open(ctx, p, state, responses)
	if err != nil {
		return nil, err
	}
	return rd, nil
}

func (f *flow) Answer(ctx context.Context, p engine.Peer, cont engine.Continue) (*engine.Answer, error) {
	return (*Elicitor)(f).model.answer(ctx, newCall(p), cont)
}

func (f *flow) LLMMediated() bool { return (*Elicitor)(f).enabled(LLMMediated) }

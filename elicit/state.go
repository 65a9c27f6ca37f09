package elicit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// maxStateSize bounds the JSON encoding of a call's state (SaveState):
// 4 KiB.
const maxStateSize = 4 << 10

// SaveState keeps v, encoded as JSON, with the tool call whose handler
// ctx belongs to, for the next run of the same handler: the run that
// continues the call once the user has answered an elicitation it stops
// at. That is where a handler carries its progress (an ID it created, a
// step it completed) instead of doing the work again.
//
// The state travels sealed, like every other piece of the flow: in the
// requestState on 2026-07-28, in the pending record of an LLM-mediated
// elicitation. It is bound to the call (subject, session, tool, arguments)
// and expires with the elicitation. Where the handler does not run again
// (the blocking request of older protocols, a browser form) [SaveState]
// costs nothing and [LoadState] sees what this run saved. Save before the
// elicitation the handler may stop at; a later SaveState replaces the
// state.
//
// It returns [ErrNotInstalled] outside a tool call of a server the
// Elicitor is installed on, and [ErrTooLarge] when v's JSON encoding is
// larger than 4 KiB.
func SaveState(ctx context.Context, v any) error {
	if _, ok := engine.LoadState(ctx); !ok {
		return ErrNotInstalled
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("elicit: state: %w", err)
	}
	if len(b) > maxStateSize {
		return ErrTooLarge
	}
	engine.SaveState(ctx, b)
	return nil
}

// LoadState decodes into v the state an earlier run of this tool call saved
// with [SaveState], and reports whether there was one. On the first run
// there is none.
func LoadState(ctx context.Context, v any) (bool, error) {
	state, _ := engine.LoadState(ctx)
	if state == nil {
		return false, nil
	}
	if err := json.Unmarshal(state, v); err != nil {
		return false, fmt.Errorf("elicit: state: %w", err)
	}
	return true, nil
}

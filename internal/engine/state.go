package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
)

// ErrBadState is a requestState that does not verify: tampered, expired,
// already used, or issued for another call, session or subject. It is one
// error for all of them; a front-end answers it with the JSON-RPC error
// -32602.
var ErrBadState = errors.New("elicit: requestState is invalid, expired or already used")

// StateBinding is what a requestState (2026-07-28) is bound to: the
// call's identity, its tool and the hash of its arguments.
type StateBinding struct {
	Who  Identity
	Tool string
	Args [32]byte
}

// BindState returns the binding of a requestState for the call who to
// tool with args, the JSON of its arguments. Arguments that are not a
// JSON object are token.ErrArgs.
func BindState(who Identity, tool string, args []byte) (StateBinding, error) {
	h, err := token.HashArgs(args)
	return StateBinding{Who: who, Tool: tool, Args: h}, err
}

// IssueState seals state (at most token.MaxStateSize bytes) as the
// requestState of the round that asked elicitationID, bound to b, valid
// for ttl (at least a second, rounded to seconds) and usable once.
func (e *Engine) IssueState(b StateBinding, elicitationID string, state []byte, ttl time.Duration) (string, error) {
	if ttl < time.Second {
		ttl = time.Second
	}
	return e.tokens.Issue(&token.Claims{
		Kind:          token.RequestState,
		SessionID:     b.Who.Session,
		Subject:       b.Who.Subject,
		ElicitationID: elicitationID,
		Tool:          b.Tool,
		ArgsHash:      b.Args,
		State:         state,
	}, ttl.Round(time.Second), token.Compact)
}

// ClaimState verifies the requestState of a retried call against b and
// claims it: the caller commits the claim once the round's answer reached
// the handler and releases it otherwise, so that a run that fails before
// leaves the requestState usable for the client's resend. A requestState
// that does not verify, or was used, is ErrBadState; one claimed by a run
// in progress, token.ErrInProgress.
func (e *Engine) ClaimState(ctx context.Context, b StateBinding, state string) (*token.Claims, *oneshot.Use, error) {
	c, err := e.tokens.Verify(state, token.Expect{
		Kind: token.RequestState, SessionID: b.Who.Session, Subject: b.Who.Subject, Tool: b.Tool, ArgsHash: b.Args,
	})
	var use *oneshot.Use
	if err == nil {
		use, err = e.tokens.Claim(ctx, c)
	}
	switch {
	case errors.Is(err, token.ErrInProgress):
		return nil, nil, token.ErrInProgress
	case errors.Is(err, token.ErrExpired), errors.Is(err, token.ErrInvalid),
		errors.Is(err, token.ErrUnknownKey), errors.Is(err, token.ErrReplayed):
		return nil, nil, ErrBadState
	case err != nil:
		return nil, nil, fmt.Errorf("elicit: requestState: %w", err)
	}
	return c, use, nil
}

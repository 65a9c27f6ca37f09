package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
)

// Engine holds what every elicitation of a server shares, whichever SDK
// carries it: the keyring, the store and the token service. It is safe
// for concurrent use.
type Engine struct {
	keys   *ring.Keyring
	store  store.Store
	tokens *token.Service
	flow   Flow
	ends   URLEnder
	quota  *quota
	left   leftover
	calls  calls
	// waiting are the calls of this node waiting for a URL-mode answer.
	waiting waiters
	local   localSessions
	// tasks are the tasks running on this node (LaunchTask).
	tasks tasksRunning
	// maxContent bounds an answer's content (Limits.MaxContent).
	maxContent int
	log        *slog.Logger
}

// URLEnder ends URL-mode elicitations: the front-end that asked them,
// which holds their pending records.
type URLEnder interface {
	// EndURL ends the URL-mode elicitation that verified, consumed
	// claims c name, with action "accept", "decline" or "cancel",
	// whichever node asked. One that is no longer pending is an error
	// that is elicit.ErrUnknownElicitation.
	EndURL(ctx context.Context, c *token.Claims, action string) error
}

// New returns an Engine that seals with keys into st, counting its
// pending elicitations within limits; flow is package elicit's part of
// every elicitation (elicit.New passes it), which also ends the URL-mode
// elicitations. opts configure its token service (the store's epoch
// watcher).
func New(keys *ring.Keyring, st store.Store, flow Flow, limits Limits, opts ...token.Option) (*Engine, error) {
	if keys == nil || st == nil || flow == nil {
		return nil, errors.New("engine: New needs a keyring, a store and a Flow")
	}
	if limits.Max <= 0 || limits.PerClient <= 0 || limits.MaxBytes <= 0 || limits.PerClientBytes <= 0 {
		return nil, errors.New("engine: New needs positive limits")
	}
	ts, err := token.NewService(keys, st, opts...)
	if err != nil {
		return nil, err
	}
	maxContent := limits.MaxContent
	if maxContent <= 0 {
		maxContent = DefaultMaxContent
	}
	return &Engine{keys: keys, store: st, tokens: ts, flow: flow, ends: flow, quota: newQuota(limits), maxContent: maxContent}, nil
}

// DefaultMaxContent is Limits.MaxContent when it is not set.
const DefaultMaxContent = 64 << 10

// SetLog sets where the engine logs what no caller hears of (a task
// handler's panic); slog.Default() until it is called, before the engine
// is used.
func (e *Engine) SetLog(l *slog.Logger) { e.log = l }

func (e *Engine) logger() *slog.Logger {
	if e.log == nil {
		return slog.Default()
	}
	return e.log
}

// Now is the keyring's clock.
func (e *Engine) Now() time.Time { return e.keys.Sealer().Now() }

// Keys returns the keyring.
func (e *Engine) Keys() *ring.Keyring { return e.keys }

// Store returns the store.
func (e *Engine) Store() store.Store { return e.store }

// Tokens returns the token service, over the keyring and the store.
func (e *Engine) Tokens() *token.Service { return e.tokens }

// EndURL ends the URL-mode elicitation that verified, consumed claims c
// name (see URLEnder), for callbacks that are not the front-end's own
// pages (elicit/oauth's).
func (e *Engine) EndURL(ctx context.Context, c *token.Claims, action string) error {
	switch action {
	case "accept", "decline", "cancel":
		return e.ends.EndURL(ctx, c, action)
	}
	return errors.New("engine: EndURL needs accept, decline or cancel")
}

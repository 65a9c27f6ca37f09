package engine

import (
	"errors"
	"log/slog"
	"slices"
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
	cfg    Config
	quota  *quota
	left   leftover
	calls  calls
	// waiting are the calls of this node waiting for a URL-mode answer.
	waiting waiters
	local   localSessions
	// tasks are the tasks running on this node (Tasks.Launch).
	tasks tasksRunning
}

// New returns an Engine that seals with keys into st, configured by cfg
// (elicit.New maps its Config onto it), counting its pending elicitations
// within cfg.Limits. opts configure its token service (the store's epoch
// watcher).
func New(keys *ring.Keyring, st store.Store, cfg Config, opts ...token.Option) (*Engine, error) {
	if keys == nil || st == nil {
		return nil, errors.New("engine: New needs a keyring and a store")
	}
	limits := cfg.Limits
	if limits.Max <= 0 || limits.PerClient <= 0 || limits.MaxBytes <= 0 || limits.PerClientBytes <= 0 {
		return nil, errors.New("engine: New needs positive limits")
	}
	ts, err := token.NewService(keys, st, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Fallbacks = slices.Clone(cfg.Fallbacks)
	return &Engine{keys: keys, store: st, tokens: ts, cfg: cfg, quota: newQuota(limits)}, nil
}

// Now is the keyring's clock.
func (e *Engine) Now() time.Time { return e.keys.Sealer().Now() }

// Keys returns the keyring.
func (e *Engine) Keys() *ring.Keyring { return e.keys }

// Store returns the store.
func (e *Engine) Store() store.Store { return e.store }

// Tokens returns the token service, over the keyring and the store.
func (e *Engine) Tokens() *token.Service { return e.tokens }

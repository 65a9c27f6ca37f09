package token

import (
	"context"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/oneshot"
)

// epochTimeout bounds the store read of an epoch made by Issue and Verify,
// which take no context.
const epochTimeout = 5 * time.Second

// WithEpoch makes the Service's tokens carry the store epoch w watches
// (compact version 2, the JWE claim "epc"), and refuses, with
// ErrStoreReset, a token of another epoch: Verify against the epoch w
// read at most its MaxAge ago (reading again before it refuses), Claim
// and Consume against the store's epoch read after the one-shot claim, so
// that a marker found missing is trusted only while the store still holds
// the epoch the token was issued in.
func WithEpoch(w *epoch.Watcher) Option {
	return func(s *Service) { s.epochs = w }
}

// CheckEpoch refuses verified claims c of another epoch than the store's
// with ErrStoreReset, as Verify does unless Expect.AnyEpoch is set. A
// token without an epoch (version 1) is not checked: see README.md.
func (s *Service) CheckEpoch(c *Claims) error {
	if s.epochs == nil || c.Epoch.IsZero() {
		return nil
	}
	if cur, ok := s.epochs.Cached(); ok && cur == c.Epoch {
		return nil
	}
	if s.epochs.Retired(c.Epoch) {
		return ErrStoreReset // no store read: replays of old tokens cost nothing
	}
	// The cache may lag another node that already saw a new epoch.
	ctx, cancel := context.WithTimeout(context.Background(), epochTimeout)
	defer cancel()
	r, err := s.epochs.Refresh(ctx)
	if err != nil {
		return nil // the store is unreachable: Claim, which needs it, decides
	}
	if r.ID != c.Epoch {
		s.epochs.Retire(c.Epoch)
		return ErrStoreReset
	}
	return nil
}

// confirmEpoch checks, after u claimed the marker of c, that the store
// still holds c's epoch; otherwise it gives the claim back. The epoch is
// the one the claim read with its write (Claim asks for it), or, when the
// store could not read it so, read now.
func (s *Service) confirmEpoch(ctx context.Context, c *Claims, u *oneshot.Use) error {
	if s.epochs == nil || c.Epoch.IsZero() {
		return nil
	}
	var ok bool
	var err error
	if v, read := u.Read(); read {
		ok, err = s.epochs.ConfirmRead(ctx, c.Epoch, v)
	} else {
		ok, err = s.epochs.Confirm(ctx, c.Epoch)
	}
	if err == nil && ok {
		return nil
	}
	u.Release(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("token: store epoch: %w", err)
	}
	s.epochs.Retire(c.Epoch)
	return ErrStoreReset
}

package token

import (
	"context"
	"errors"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/store"
)

// usedPurpose is the binding purpose of one-shot markers.
const usedPurpose = "token/used"

// Consume verifies tok as Verify does and then uses it up: among every
// process that shares the Service's store, the first consumer of a token
// gets its claims and every later one gets ErrReplayed, until the token
// expires (after which Verify reports ErrExpired).
//
// The marker is written with the store's PutIfAbsent under a blinded key:
// the keyring's HMAC, under the secret that issued the token (so that every
// node agrees on it whatever its primary), of the unbound binding
// {Purpose: "token/used", RecordID: token ID}. Its value is a oneshot
// marker, which is not a stored record, and it expires with the token plus
// the marker grace (WithMarkerGrace). A store failure is returned wrapped;
// the token is then not consumed, or only claimed, and free again when the
// claim's lease ends (WithClaimLease): a resend of the token then
// succeeds. Meanwhile it gets ErrInProgress.
func (s *Service) Consume(ctx context.Context, tok string, want Expect) (*Claims, error) {
	if s.store == nil {
		return nil, ErrNoStore
	}
	c, err := s.Verify(tok, want)
	if err != nil {
		return nil, err
	}
	if err := s.markUsed(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// MarkUsed uses up verified claims c, as Consume does after it verified:
// for a page that verifies when it is shown and consumes when the user
// acts.
func (s *Service) MarkUsed(ctx context.Context, c *Claims) error { return s.markUsed(ctx, c) }

// Used reports whether verified claims c were consumed already: a claim
// still under its lease (Claim, not committed) is not. It writes
// nothing (but a store epoch, to a store that lost its own): a page can
// tell the user that a link was used without using it. A token of an
// earlier epoch of the store gets ErrStoreReset.
func (s *Service) Used(ctx context.Context, c *Claims) (bool, error) {
	key, err := s.markerKey(c)
	if err != nil {
		return false, err
	}
	v, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if s.epochs != nil && !c.Epoch.IsZero() {
			ok, err := s.epochs.Confirm(ctx, c.Epoch)
			if err != nil {
				return false, fmt.Errorf("token: store epoch: %w", err)
			}
			if !ok {
				return false, ErrStoreReset
			}
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("token: one-shot marker: %w", err)
	}
	return !oneshot.Claimed(v), nil
}

func (s *Service) markerKey(c *Claims) (string, error) {
	if s.store == nil {
		return "", ErrNoStore
	}
	key, ok := s.keys.StoreKeyUnder(c.KeyID, envelope.Binding{Purpose: usedPurpose, Unbound: true, RecordID: string(c.ID[:])})
	if !ok {
		return "", ErrUnknownKey
	}
	return key, nil
}

// markUsed claims and at once commits the one-shot marker of verified
// claims c.
func (s *Service) markUsed(ctx context.Context, c *Claims) error {
	u, err := s.Claim(ctx, c)
	if err != nil {
		return err
	}
	if err := u.Commit(ctx); err != nil {
		u.Release(context.WithoutCancel(ctx))
		return fmt.Errorf("token: one-shot marker: %w", err)
	}
	return nil
}

// Claim claims the one-shot marker of verified claims c (package
// oneshot), for a consumer that uses the token up only once what it
// guards happened: Commit then, Release after a failure; a claim left
// alone (a process killed, the store unreachable) ends with its lease
// (WithClaimLease), and the token is usable again. A write applied with
// its reply lost is recognised as this claim's own. It returns
// ErrInProgress while another consumer holds a claim, ErrReplayed once
// the token was used, ErrExpired when the marker's expiry has passed.
func (s *Service) Claim(ctx context.Context, c *Claims) (*oneshot.Use, error) {
	key, err := s.markerKey(c)
	if err != nil {
		return nil, err
	}
	// No fingerprint: the blinded key already names the token, and the
	// token ID must never reach the store in the clear (a marker's value
	// is as visible to the store as its key).
	o := oneshot.Options{Lease: s.lease, Expiry: c.Expiry.Add(s.grace), Now: s.now}
	if s.epochs != nil && !c.Epoch.IsZero() {
		o.Read = epoch.Key // read with the claim, after it: see confirmEpoch
	}
	u, err := oneshot.Claim(ctx, s.store, key, nil, o)
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		// The marker's expiry is already past on the store's clock.
		return nil, ErrExpired
	case errors.Is(err, oneshot.ErrUsed):
		return nil, ErrReplayed
	case errors.Is(err, oneshot.ErrBusy):
		return nil, ErrInProgress
	case err != nil:
		return nil, fmt.Errorf("token: one-shot marker: %w", err)
	}
	if err := s.confirmEpoch(ctx, c, u); err != nil {
		return nil, err
	}
	return u, nil
}

// DefaultParam is the query parameter that carries a URL-mode token in
// the links of the elicit package's pages.
const DefaultParam = "token"

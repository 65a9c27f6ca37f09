package token

import (
	"context"
	"errors"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/envelope"
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
// {Purpose: "token/used", RecordID: token ID}. Its value is the single byte
// 0x01, which is not a stored record, and it expires with the token plus
// the marker grace (WithMarkerGrace). A store failure is returned wrapped;
// the token is then not consumed.
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

// Used reports whether verified claims c were consumed already. It writes
// nothing: a page can tell the user that a link was used without using it.
func (s *Service) Used(ctx context.Context, c *Claims) (bool, error) {
	key, err := s.markerKey(c)
	if err != nil {
		return false, err
	}
	_, err = s.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("token: one-shot marker: %w", err)
	}
	return true, nil
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

// markUsed writes the one-shot marker of verified claims c.
func (s *Service) markUsed(ctx context.Context, c *Claims) error {
	key, err := s.markerKey(c)
	if err != nil {
		return err
	}
	won, err := s.store.PutIfAbsent(ctx, key, []byte{1}, c.Expiry.Add(s.grace))
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		// The marker's expiry is already past on the store's clock.
		return ErrExpired
	case err != nil:
		return fmt.Errorf("token: one-shot marker: %w", err)
	case !won:
		return ErrReplayed
	}
	return nil
}

// DefaultParam is the query parameter that carries a URL-mode token in
// the links of the elicit package's pages.
const DefaultParam = "token"

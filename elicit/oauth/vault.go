package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/internal/credential"
	"github.com/elicitvault/elicitvault/store"
)

// expiryDelta is how long before its expiry an access token is refreshed
// (as golang.org/x/oauth2 does).
const expiryDelta = 10 * time.Second

// Refresh lock: how long one refresher holds it at most, and how often the
// others look for its result.
const (
	lockTTL  = 30 * time.Second
	lockPoll = 50 * time.Millisecond
)

// stored is an opened credential.
type stored struct {
	*credential.Credential
	raw []byte // the record it was read from, for compare-and-swap
}

// valid reports whether the access token is good for a while.
func (s *stored) valid(now time.Time) bool {
	return s.AccessToken != "" && (s.Expiry.IsZero() || s.Expiry.Add(-expiryDelta).After(now))
}

// usable reports whether the credential gives an access token without the
// user: valid, or refreshable.
func (s *stored) usable(now time.Time) bool { return s.valid(now) || s.RefreshToken != "" }

func (s *stored) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: s.AccessToken, TokenType: s.TokenType, RefreshToken: s.RefreshToken, Expiry: s.Expiry}
}

// load reads the credential of id for p; ErrNotConnected when there is
// none that opens.
func (c *Connector) load(ctx context.Context, id identity, p *Provider) (*stored, error) {
	raw, err := c.keys.Lookup(ctx, c.store, id.binding(purposeCredential, p.Name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotConnected
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: store: %w", err)
	}
	return c.open(id, p, raw)
}

func (c *Connector) open(id identity, p *Provider, raw []byte) (*stored, error) {
	pt, err := c.keys.OpenRecord(id.binding(purposeCredential, p.Name), raw)
	if err != nil {
		return nil, ErrNotConnected // forged, misplaced, expired: none here
	}
	defer clear(pt)
	cred, err := credential.Decode(pt)
	if err != nil {
		return nil, ErrNotConnected
	}
	return &stored{Credential: cred, raw: raw}, nil
}

// seal seals t as the credential of id for p, keeping the scope of prev
// when the provider did not say it again.
func (c *Connector) seal(id identity, p *Provider, t *oauth2.Token, scope string) ([]byte, time.Time, error) {
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		scope = s
	}
	cred := &credential.Credential{AccessToken: t.AccessToken, TokenType: t.Type(), RefreshToken: t.RefreshToken, Scope: scope, Expiry: t.Expiry}
	pt, err := credential.Append(nil, cred)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("oauth: the provider's token is too large")
	}
	defer clear(pt)
	expiry := c.now().Add(c.ttl)
	if t.RefreshToken == "" && !t.Expiry.IsZero() && t.Expiry.Before(expiry) {
		expiry = t.Expiry
	}
	if !expiry.After(c.now()) {
		return nil, time.Time{}, fmt.Errorf("oauth: the provider's token has expired")
	}
	rec, err := c.keys.SealRecord(id.binding(purposeCredential, p.Name), pt, expiry)
	if err != nil {
		return nil, time.Time{}, err
	}
	return rec, expiry, nil
}

// save stores t as the credential of id for p, replacing any.
func (c *Connector) save(ctx context.Context, id identity, p *Provider, t *oauth2.Token) error {
	rec, expiry, err := c.seal(id, p, t, strings.Join(p.Config.Scopes, " "))
	if err != nil {
		return err
	}
	b := id.binding(purposeCredential, p.Name)
	if err := c.store.Put(ctx, c.keys.StoreKey(b), rec, expiry); err != nil {
		return fmt.Errorf("oauth: store: %w", err)
	}
	for _, k := range c.keys.StoreKeys(b)[1:] {
		c.store.Delete(ctx, k) // a copy under a previous secret
	}
	return nil
}

// putOutcome records how a flow of id for p failed at the provider, for
// Connect to report; takeOutcome reads and removes it.
func (c *Connector) putOutcome(ctx context.Context, id identity, p *Provider, code string, expiry time.Time) {
	b := id.binding(purposeOutcome, p.Name)
	rec, err := c.keys.SealRecord(b, []byte(code), expiry)
	if err == nil {
		c.store.Put(ctx, c.keys.StoreKey(b), rec, expiry)
	}
}

func (c *Connector) takeOutcome(ctx context.Context, id identity, p *Provider) (string, error) {
	b := id.binding(purposeOutcome, p.Name)
	raw, err := c.keys.Take(ctx, c.store, b)
	if err != nil {
		return "", err
	}
	pt, err := c.keys.OpenRecord(b, raw)
	if err != nil {
		return "", err
	}
	return string(pt), nil
}

func (c *Connector) connection(ctx context.Context, id identity, p *Provider, s *stored) *Connection {
	vs := &vaultSource{c: c, ctx: context.WithoutCancel(ctx), id: id, p: p, cur: s}
	return &Connection{Provider: p.Name, TokenSource: vs}
}

// vaultSource is a Connection's token source: the vault's credential,
// refreshed by one node at a time.
type vaultSource struct {
	c   *Connector
	ctx context.Context
	id  identity
	p   *Provider

	mu  sync.Mutex
	cur *stored
}

// Token returns a valid access token. When the one it holds has expired it
// reads the vault (another node may have refreshed it); if that one has
// expired too, the node that wins the store's refresh lock refreshes it
// and stores the result, and the others wait for that result.
func (vs *vaultSource) Token() (*oauth2.Token, error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	c := vs.c
	if vs.cur != nil && vs.cur.valid(c.now()) {
		return vs.cur.token(), nil
	}
	ctx, cancel := context.WithTimeout(vs.ctx, lockTTL+5*time.Second)
	defer cancel()
	lockKey := c.keys.StoreKey(vs.id.binding(purposeLock, vs.p.Name))
	for {
		s, err := c.load(ctx, vs.id, vs.p)
		if err != nil {
			vs.cur = nil
			return nil, err
		}
		vs.cur = s
		if s.valid(c.now()) {
			return s.token(), nil
		}
		if s.RefreshToken == "" {
			return nil, ErrNotConnected
		}
		won, err := c.store.PutIfAbsent(ctx, lockKey, []byte{1}, c.now().Add(lockTTL))
		if err != nil {
			return nil, fmt.Errorf("oauth: store: %w", err)
		}
		if won {
			t, err := vs.refresh(ctx, s)
			c.store.Delete(context.WithoutCancel(ctx), lockKey)
			return t, err
		}
		select {
		case <-time.After(lockPoll):
		case <-ctx.Done():
			return nil, fmt.Errorf("oauth: waiting for another node's refresh: %w", ctx.Err())
		}
	}
}

// refresh runs the refresh grant with s's refresh token, under the lock,
// and stores the result if the credential is still s.
func (vs *vaultSource) refresh(ctx context.Context, s *stored) (*oauth2.Token, error) {
	c, p := vs.c, vs.p
	// Read again under the lock: a refresh that finished between the
	// read and the lock must not be repeated (a rotating refresh token
	// would be spent twice).
	if again, err := c.load(ctx, vs.id, p); err != nil {
		return nil, err
	} else if string(again.raw) != string(s.raw) {
		vs.cur = again
		if again.valid(c.now()) {
			return again.token(), nil
		}
		s = again
	}
	old := &oauth2.Token{RefreshToken: s.RefreshToken}
	t, err := p.Config.TokenSource(c.providerContext(ctx), old).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// The refresh token is dead: the user must connect again.
			for _, k := range c.keys.StoreKeys(vs.id.binding(purposeCredential, p.Name)) {
				c.store.CompareAndSwap(ctx, k, s.raw, nil, time.Now().Add(time.Hour))
			}
			vs.cur = nil
			return nil, fmt.Errorf("%w: %w", ErrNotConnected, &ProviderError{Provider: p.Name, Code: re.ErrorCode})
		}
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, &ProviderError{Provider: p.Name, Code: re.ErrorCode}
		}
		return nil, fmt.Errorf("oauth: refresh at %s failed", p.Name)
	}
	rec, expiry, err := c.seal(vs.id, p, t, s.Scope)
	if err != nil {
		return nil, err
	}
	if err := c.store.Put(ctx, c.keys.StoreKey(vs.id.binding(purposeCredential, p.Name)), rec, expiry); err != nil {
		return nil, fmt.Errorf("oauth: store: %w", err)
	}
	vs.cur, _ = c.open(vs.id, p, rec)
	return t, nil
}

// revoke revokes the credential's refresh token, or its access token, at
// the provider's RFC 7009 endpoint, with the client's credentials.
func (c *Connector) revoke(ctx context.Context, p *Provider, s *stored) error {
	tok, hint := s.RefreshToken, "refresh_token"
	if tok == "" {
		tok, hint = s.AccessToken, "access_token"
	}
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	if p.Config.Endpoint.AuthStyle == oauth2.AuthStyleInParams {
		form.Set("client_id", p.Config.ClientID)
		form.Set("client_secret", p.Config.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("oauth: revocation endpoint of %s: bad URL", p.Name)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if p.Config.Endpoint.AuthStyle != oauth2.AuthStyleInParams {
		req.SetBasicAuth(url.QueryEscape(p.Config.ClientID), url.QueryEscape(p.Config.ClientSecret))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("oauth: revocation at %s failed", p.Name)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("oauth: revocation at %s: HTTP %d", p.Name, resp.StatusCode)
	}
	return nil
}

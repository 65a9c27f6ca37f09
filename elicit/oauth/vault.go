package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/internal/credential"
	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/store"
)

// expiryDelta is how long before its expiry an access token is refreshed
// (as golang.org/x/oauth2 does).
const expiryDelta = 10 * time.Second

// The refresh lock. A holder's lease lasts Config.RefreshLease
// (defaultRefreshLease) and is renewed every third of it while the
// provider answers, for at most refreshTimeout; the others look for the
// holder's result every lockPoll.
const (
	// defaultRefreshLease is the default of Config.RefreshLease.
	defaultRefreshLease = 30 * time.Second
	refreshTimeout      = 2 * time.Minute
	lockPoll            = 50 * time.Millisecond
)

// Kept revocations: at most revokeSlots tokens per user and provider
// whose revocation the provider has not confirmed.
const revokeSlots = 4

// errRefreshElsewhere: this call waited for another node's refresh, which
// ended without a new credential. It does not send the same refresh token
// again (the other node's request may have reached the provider); the
// next call does.
var errRefreshElsewhere = errors.New("oauth: the refresh on another node failed; try again")

// stored is an opened credential.
type stored struct {
	*credential.Credential
	raw []byte // the record it was read from, for compare-and-swap
	key string // the store key it was read from
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
	key, raw, err := c.lookup(ctx, id.binding(purposeCredential, p.Name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotConnected
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: store: %w", err)
	}
	s, err := c.open(id, p, raw)
	if err != nil {
		return nil, err
	}
	s.key = key
	return s, nil
}

// lookup is the keyring's Lookup that also says under which store key it
// found the record: the primary key, the previous ones, the primary again.
func (c *Connector) lookup(ctx context.Context, b envelope.Binding) (string, []byte, error) {
	keys := c.keys.StoreKeys(b)
	if len(keys) > 1 {
		keys = append(keys, keys[0])
	}
	for _, k := range keys {
		v, err := c.store.Get(ctx, k)
		if err == nil {
			return k, v, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", nil, err
		}
	}
	return "", nil, store.ErrNotFound
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
	tokenExpiry := t.Expiry
	if t.ExpiresIn > 0 {
		// On the Connector's clock, which judges it: the oauth2 package
		// computed Expiry on the wall clock.
		tokenExpiry = c.keys.Sealer().Now().Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	cred := &credential.Credential{AccessToken: t.AccessToken, TokenType: t.Type(), RefreshToken: t.RefreshToken, Scope: scope, Expiry: tokenExpiry}
	pt, err := credential.Append(nil, cred)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("oauth: the provider's token is too large")
	}
	defer clear(pt)
	expiry := c.keys.Sealer().Now().Add(c.ttl)
	if t.RefreshToken == "" && !tokenExpiry.IsZero() && tokenExpiry.Before(expiry) {
		expiry = tokenExpiry
	}
	if !expiry.After(c.keys.Sealer().Now()) {
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
// and stores the result, and the others wait for that result: a refresh
// token is sent by one node at a time, and a call that waited for
// another node never sends the one that node sent.
func (vs *vaultSource) Token() (*oauth2.Token, error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	c := vs.c
	if vs.cur != nil && vs.cur.valid(c.keys.Sealer().Now()) {
		return vs.cur.token(), nil
	}
	ctx, cancel := context.WithTimeout(vs.ctx, refreshTimeout+c.lease+5*time.Second)
	defer cancel()
	lockKey := c.keys.StoreKey(vs.id.binding(purposeLock, vs.p.Name))
	var waitedOn []byte // the record another node was refreshing
	for {
		s, err := c.load(ctx, vs.id, vs.p)
		if err != nil {
			vs.cur = nil
			return nil, err
		}
		vs.cur = s
		if s.valid(c.keys.Sealer().Now()) {
			return s.token(), nil
		}
		if s.RefreshToken == "" {
			return nil, ErrNotConnected
		}
		if waitedOn != nil && string(waitedOn) != string(s.raw) && s.AccessToken != "" && (s.Expiry.IsZero() || s.Expiry.After(c.keys.Sealer().Now())) {
			// The result of the refresh this call waited for: not
			// refreshed again while it lasts.
			return s.token(), nil
		}
		l, err := c.lock(ctx, lockKey)
		if err != nil {
			return nil, fmt.Errorf("oauth: store: %w", err)
		}
		if l != nil {
			if waitedOn != nil {
				again, err := c.load(l.ctx, vs.id, vs.p)
				if err == nil && string(again.raw) == string(waitedOn) {
					// The holder released the lock without a new
					// credential.
					l.release()
					return nil, errRefreshElsewhere
				}
			}
			t, err := vs.refresh(l.ctx, s)
			l.release()
			return t, err
		}
		waitedOn = s.raw
		select {
		case <-time.After(lockPoll):
		case <-ctx.Done():
			return nil, fmt.Errorf("oauth: waiting for another node's refresh: %w", ctx.Err())
		}
	}
}

// lease is a held refresh lock: ctx is cancelled when it is released or
// lost (another node holds the key, after a renewal failed for a whole
// lease).
type lease struct {
	c      *Connector
	key    string
	id     []byte
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// lock takes the refresh lock under key, or returns nil when another node
// holds it. A taken lock is renewed until released.
func (c *Connector) lock(ctx context.Context, key string) (*lease, error) {
	id := make([]byte, 16)
	rand.Read(id)
	won, err := c.store.PutIfAbsent(ctx, key, id, c.keys.Sealer().Now().Add(c.lease))
	if err != nil || !won {
		return nil, err
	}
	l := &lease{c: c, key: key, id: id, done: make(chan struct{})}
	l.ctx, l.cancel = context.WithTimeout(ctx, refreshTimeout)
	go l.renew()
	return l, nil
}

func (l *lease) renew() {
	defer close(l.done)
	t := time.NewTicker(l.c.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
			ok, err := l.c.store.CompareAndSwap(l.ctx, l.key, l.id, l.id, l.c.keys.Sealer().Now().Add(l.c.lease))
			if err == nil && !ok {
				l.cancel() // lost: send nothing more
				return
			}
		}
	}
}

// release stops the renewal and deletes the lock if it is still this
// lease's.
func (l *lease) release() {
	l.cancel()
	<-l.done
	l.c.store.CompareAndSwap(context.WithoutCancel(l.ctx), l.key, l.id, nil, l.c.keys.Sealer().Now().Add(time.Minute))
}

// waitRefresh waits until no node holds the refresh lock of id for p:
// a refresh that was running has then stored its credential or revoked
// it.
func (c *Connector) waitRefresh(ctx context.Context, id identity, p *Provider) error {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout+c.lease+5*time.Second)
	defer cancel()
	key := c.keys.StoreKey(id.binding(purposeLock, p.Name))
	for {
		l, err := c.lock(ctx, key)
		if err != nil {
			return fmt.Errorf("oauth: store: %w", err)
		}
		if l != nil {
			l.release()
			return nil
		}
		select {
		case <-time.After(lockPoll):
		case <-ctx.Done():
			return fmt.Errorf("oauth: waiting for a refresh to end: %w", ctx.Err())
		}
	}
}

// refresh runs the refresh grant with s's refresh token, under the lock
// (ctx ends when the lease is lost), and stores the result if the
// credential is still s.
func (vs *vaultSource) refresh(ctx context.Context, s *stored) (*oauth2.Token, error) {
	c, p := vs.c, vs.p
	// Read again under the lock: a refresh that finished between the
	// read and the lock must not be repeated (a rotating refresh token
	// would be spent twice).
	if again, err := c.load(ctx, vs.id, p); err != nil {
		vs.cur = nil
		return nil, err
	} else if string(again.raw) != string(s.raw) {
		vs.cur = again
		if again.valid(c.keys.Sealer().Now()) {
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
	cur, err := c.commit(context.WithoutCancel(ctx), vs.id, p, s, t)
	vs.cur = cur
	if err != nil {
		return nil, err
	}
	return cur.token(), nil
}

// commit replaces s with t, only if s is still the stored credential
// (compare-and-swap: the store is the fence). If the credential is gone
// (Disconnect), t is revoked and the result is ErrNotConnected: nothing
// is stored after a Disconnect. If another credential replaced s (a new
// connection), that one is returned and t is dropped.
func (c *Connector) commit(ctx context.Context, id identity, p *Provider, s *stored, t *oauth2.Token) (*stored, error) {
	b := id.binding(purposeCredential, p.Name)
	rec, expiry, err := c.seal(id, p, t, s.Scope)
	if err != nil {
		return nil, err
	}
	primary := c.keys.StoreKey(b)
	for range 3 {
		var ok bool
		if s.key == primary {
			ok, err = c.store.CompareAndSwap(ctx, primary, s.raw, rec, expiry)
		} else if ok, err = c.store.CompareAndSwap(ctx, s.key, s.raw, nil, expiry); ok && err == nil {
			// Moved from a previous secret's key: the primary key may
			// hold nothing else.
			if ok, err = c.store.PutIfAbsent(ctx, primary, rec, expiry); err == nil && !ok {
				cur, err := c.load(ctx, id, p)
				return cur, err
			}
		}
		if err != nil {
			return nil, fmt.Errorf("oauth: store: %w", err)
		}
		if ok {
			cur, err := c.open(id, p, rec)
			if err == nil {
				cur.key = primary
			}
			return cur, err
		}
		cur, err := c.load(ctx, id, p)
		if errors.Is(err, ErrNotConnected) {
			// Disconnected while the provider answered.
			got := &stored{Credential: &credential.Credential{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken}}
			if p.RevocationURL != "" {
				c.revokeKept(ctx, id, p, got)
			}
			return nil, ErrNotConnected
		}
		if err != nil {
			return nil, err
		}
		if cur.RefreshToken != s.RefreshToken || cur.AccessToken != s.AccessToken {
			return cur, nil // another credential
		}
		s = cur // the same, rewrapped: try again
	}
	return nil, errors.New("oauth: the credential kept changing")
}

// revokeBinding is the binding of kept revocation slot i of id for p.
func revokeBinding(id identity, p *Provider, i int) envelope.Binding {
	return id.binding(purposeRevoke, p.Name+"#"+strconv.Itoa(i))
}

// revokeKept revokes s's token at p, keeping it sealed in a slot until
// the provider confirmed, for retryRevocations.
func (c *Connector) revokeKept(ctx context.Context, id identity, p *Provider, s *stored) error {
	kept := &credential.Credential{RefreshToken: s.RefreshToken}
	if kept.RefreshToken == "" {
		kept.AccessToken = s.AccessToken
	}
	pt, err := credential.Append(nil, kept)
	if err != nil {
		return err
	}
	defer clear(pt)
	expiry := c.keys.Sealer().Now().Add(c.ttl)
	key := ""
	for i := range revokeSlots {
		b := revokeBinding(id, p, i)
		rec, err := c.keys.SealRecord(b, pt, expiry)
		if err != nil {
			return err
		}
		k := c.keys.StoreKey(b)
		if won, err := c.store.PutIfAbsent(ctx, k, rec, expiry); err == nil && won {
			key = k
			break
		} else if i == revokeSlots-1 && err == nil {
			// Every slot is taken: the last one gives way.
			if c.store.Put(ctx, k, rec, expiry) == nil {
				key = k
			}
		}
	}
	if err := c.revoke(ctx, p, s); err != nil {
		return err
	}
	if key != "" {
		c.store.Delete(ctx, key)
	}
	return nil
}

// retryRevocations revokes the kept tokens of id for p again, and forgets
// each the provider confirmed. It reports whether there were any.
func (c *Connector) retryRevocations(ctx context.Context, id identity, p *Provider) (bool, error) {
	if p.RevocationURL == "" {
		return false, nil
	}
	var errs []error
	found := false
	for i := range revokeSlots {
		b := revokeBinding(id, p, i)
		key, raw, err := c.lookup(ctx, b)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("oauth: store: %w", err))
			continue
		}
		found = true
		pt, err := c.keys.OpenRecord(b, raw)
		if err != nil {
			c.store.CompareAndSwap(ctx, key, raw, nil, c.keys.Sealer().Now().Add(time.Minute))
			continue
		}
		cred, err := credential.Decode(pt)
		clear(pt)
		if err != nil {
			c.store.CompareAndSwap(ctx, key, raw, nil, c.keys.Sealer().Now().Add(time.Minute))
			continue
		}
		if err := c.revoke(ctx, p, &stored{Credential: cred}); err != nil {
			errs = append(errs, err)
			continue
		}
		c.store.CompareAndSwap(ctx, key, raw, nil, c.keys.Sealer().Now().Add(time.Minute))
	}
	return found, errors.Join(errs...)
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

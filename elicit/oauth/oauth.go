// Package oauth connects a user's account at a third-party service to a
// tool: OAuth 2.0 authorization code with PKCE, through URL-mode
// elicitation, with the credential sealed per user in the store.
//
// Beside a server's Elicitor ev:
//
//	conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: "https://mcp.example.com/oauth/start"},
//		&oauth.Provider{Name: "github", Config: &oauth2.Config{
//			ClientID:     os.Getenv("GITHUB_CLIENT_ID"),
//			ClientSecret: os.Getenv("GITHUB_CLIENT_SECRET"),
//			Endpoint:     github.Endpoint, // golang.org/x/oauth2/github
//			RedirectURL:  "https://mcp.example.com/oauth/callback/github",
//			Scopes:       []string{"repo"},
//		}})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux.Handle("/oauth/", conn.Handler()) // the start page and the callback
//
// and in a tool handler:
//
//	c, err := conn.Connect(ctx, "github")
//	if err != nil {
//		return nil, nil, err // ErrDeclined, or elicit's errors: return them unchanged
//	}
//	resp, err := oauth2.NewClient(ctx, c.TokenSource).Get("https://api.github.com/user")
//
// A tool calls [Connector.Connect] with the name of a registered
// [Provider]. If the user already connected that provider, Connect returns
// at once a [Connection]
// whose token source refreshes the access token as needed; otherwise it
// elicits in URL mode. The link the user opens carries one sealed,
// one-shot oauth-state token (bound to subject, session, elicitation and
// provider; no PII). [Connector.Handler] serves that link: it sets a
// short-lived cookie in the browser and redirects to the provider with the
// state and a PKCE (S256) challenge derived from the cookie. The callback
// verifies the state, the cookie and, when the provider sends one, the
// issuer (RFC 9207), consumes the state, exchanges the code, seals the
// credential and completes the elicitation on whichever node asked.
//
// Credentials are sealed records of the keyring (rotated by the keyring's
// Rewrap, counted by its Inspect) under blinded keys, bound to the
// authenticated user
// (the MCP request's TokenInfo.UserID) and the provider: never to a
// session alone, except for a server without authentication, where the
// MCP session is the only identity there is (see SECURITY.md).
//
// The Connector is built on an [elicit.Elicitor] ([New] takes its keyring,
// its store and its clock, [elicit.Config].Clock). A tool that calls
// Connect may run again before Connect returns, like any tool that
// elicits: see Reruns in the documentation of package [elicit].
package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/elicitlink"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
)

// Provider is an OAuth 2.0 authorization server the Connector can connect
// users to.
type Provider struct {
	// Name identifies the provider in the vault and in the state (at most
	// 64 bytes of a–z 0–9 - _ .).
	Name string
	// Config is the client's registration: client ID and secret, the
	// authorization and token endpoints, the redirect URL (the Connector
	// Handler's callback, as registered at the provider) and the scopes.
	Config *oauth2.Config
	// Issuer, when set, is the provider's issuer identifier: an `iss`
	// parameter in the authorization response must equal it (RFC 9207).
	Issuer string
	// RequireIssuer refuses an authorization response without `iss` (set
	// it when the provider's metadata says
	// authorization_response_iss_parameter_supported).
	RequireIssuer bool
	// RevocationURL is the provider's RFC 7009 revocation endpoint, or "".
	RevocationURL string
	// AuthOptions are added to the authorization request (for example
	// oauth2.AccessTypeOffline, or prompt=consent).
	AuthOptions []oauth2.AuthCodeOption
	// Message is what the client shows the user; "Connect your <Name>
	// account" when empty.
	Message string
}

// Config configures a Connector.
type Config struct {
	// Elicitor is the server's: the Connector seals and stores with its
	// keyring and store.
	Elicitor *elicit.Elicitor
	// StartURL is the public URL at which Handler serves the start page
	// (the link sent to the user), for example
	// "https://mcp.example.com/oauth/start". The callback is each
	// provider's Config.RedirectURL, also served by Handler, on the same
	// host (the start page's cookie must reach it).
	StartURL string
	// User, when set, returns the user authenticated by the server in the
	// browser (for example from its own session cookie). The start page and
	// the callback then refuse any user but the one the elicitation was
	// for.
	User func(*http.Request) (string, bool)
	// CredentialTTL is how long a credential is kept after it was obtained
	// or last refreshed (90 days when zero), or until its
	// access token expires when it has no refresh token.
	CredentialTTL time.Duration
	// HTTPClient talks to the providers (http.DefaultClient when nil).
	HTTPClient *http.Client
	// RefreshLease is how long the refresh lock outlives a node that
	// stopped renewing it (30 seconds when zero). The node that
	// refreshes renews it every third of it while the provider answers,
	// so a slow provider never lets a second node send the same refresh
	// token.
	RefreshLease time.Duration
}

// defaultCredentialTTL is the default of Config.CredentialTTL.
const defaultCredentialTTL = 90 * 24 * time.Hour

// Errors of Connect and of the token source. A provider's refusal is a
// *ProviderError.
var (
	// ErrDeclined: the user declined to connect (in the client, or
	// access_denied at the provider; the *ProviderError then matches it).
	ErrDeclined = errors.New("oauth: the user declined to connect the account")
	// ErrCanceled: the elicitation was cancelled, or the flow failed.
	ErrCanceled = errors.New("oauth: the connection was cancelled")
	// ErrNotConnected: no credential for this user and provider (token
	// source after Disconnect, or a refresh token the provider refused).
	ErrNotConnected = errors.New("oauth: account not connected")
	// ErrNoIdentity: the call has neither an authenticated user nor a
	// session to bind a credential to (a stateless server without
	// authentication).
	ErrNoIdentity = errors.New("oauth: no user or session to bind the credential to")
)

// errUnknownProvider: no provider of that name is registered (a bug of the
// caller's).
var errUnknownProvider = errors.New("oauth: unknown provider")

// ProviderError is an error response of the provider (RFC 6749 §4.1.2.1,
// §5.2): Code is its error code ("access_denied", "invalid_grant", ...).
// Its description is not kept: it may quote what the user typed.
type ProviderError struct {
	Provider string
	Code     string
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("oauth: provider %s refused: %s", e.Provider, e.Code)
}

// Is makes an access_denied response match ErrDeclined.
func (e *ProviderError) Is(target error) bool {
	return target == ErrDeclined && e.Code == "access_denied"
}

// Connector runs OAuth 2.0 connections for the tools of a server. It is
// safe for concurrent use.
type Connector struct {
	e         *elicit.Elicitor
	eng       *engine.Engine
	keys      *ring.Keyring
	store     store.Store
	tokens    *token.Service
	start     *url.URL
	user      func(*http.Request) (string, bool)
	ttl       time.Duration
	lease     time.Duration
	hc        *http.Client
	providers map[string]*Provider
	callbacks map[string]*Provider // by the path of the redirect URL
	hosts     map[string]string    // the Host of each page, by its path
}

// New returns a Connector for the providers.
func New(cfg *Config, providers ...*Provider) (*Connector, error) {
	if cfg == nil || cfg.Elicitor == nil {
		return nil, errors.New("oauth: New needs an Elicitor")
	}
	eng := elicitlink.Engine(cfg.Elicitor)
	if eng == nil {
		return nil, errors.New("oauth: New needs an Elicitor made by elicit.New")
	}
	start, err := url.Parse(cfg.StartURL)
	if err != nil || start.Scheme == "" || start.Host == "" {
		return nil, errors.New("oauth: StartURL must be an absolute URL")
	}
	ts, err := token.NewService(eng.Keys(), eng.Store(), token.WithEpoch(epoch.NewWatcher(eng.Store(), epoch.Options{Now: eng.Keys().Sealer().Now})))
	if err != nil {
		return nil, err
	}
	c := &Connector{
		e: cfg.Elicitor, eng: eng, keys: eng.Keys(), store: eng.Store(), tokens: ts, start: start,
		user: cfg.User, ttl: cfg.CredentialTTL, lease: cfg.RefreshLease, hc: cfg.HTTPClient,
		providers: map[string]*Provider{}, callbacks: map[string]*Provider{},
		hosts: map[string]string{start.Path: start.Host},
	}
	if c.ttl <= 0 {
		c.ttl = defaultCredentialTTL
	}
	if c.lease <= 0 {
		c.lease = defaultRefreshLease
	}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	for _, p := range providers {
		if p == nil || !validName(p.Name) || p.Config == nil {
			return nil, errors.New("oauth: a provider needs a valid Name and a Config")
		}
		if _, dup := c.providers[p.Name]; dup {
			return nil, fmt.Errorf("oauth: provider %s registered twice", p.Name)
		}
		cb, err := url.Parse(p.Config.RedirectURL)
		if err != nil || cb.Path == "" || cb.Path == start.Path {
			return nil, fmt.Errorf("oauth: provider %s: RedirectURL must be an absolute URL with a path of its own", p.Name)
		}
		if cb.Hostname() != start.Hostname() {
			// The start page's cookie must reach the callback.
			return nil, fmt.Errorf("oauth: provider %s: RedirectURL must be on StartURL's host", p.Name)
		}
		if _, dup := c.callbacks[cb.Path]; dup {
			return nil, fmt.Errorf("oauth: provider %s: RedirectURL shared with another provider", p.Name)
		}
		c.providers[p.Name] = p
		c.callbacks[cb.Path] = p
		c.hosts[cb.Path] = cb.Host
	}
	return c, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Connection is a user's connected account at a provider.
type Connection struct {
	// Provider is the provider's name.
	Provider string
	// TokenSource returns a valid access token, refreshing it (once across
	// every node that shares the store) when it has expired.
	// oauth2.NewClient(ctx, TokenSource) is an HTTP client that sends it.
	TokenSource oauth2.TokenSource
}

// Connect returns the user's connection to provider. With a stored
// credential that is valid or refreshable it returns at once; otherwise it
// asks the user in URL mode to connect the account (see elicit.URL for
// waiting, protocols and nodes) and returns the new connection once the
// callback stored it.
//
// A refusal is ErrDeclined (errors.Is), a failed flow ErrCanceled or a
// *ProviderError; the errors of elicit.URL (elicit.ErrInputRequired on
// 2026-07-28, the -32042 error with
// elicit.WithURLElicitationRequiredError, ...) are returned for the
// handler to return as they are.
func (c *Connector) Connect(ctx context.Context, provider string, opts ...elicit.Option) (*Connection, error) {
	p, ok := c.providers[provider]
	if !ok {
		return nil, errUnknownProvider
	}
	id, err := identityOf(ctx)
	if err != nil {
		return nil, err
	}
	if cred, err := c.load(ctx, id, p); err == nil && cred.usable(c.keys.Sealer().Now()) {
		return c.connection(ctx, id, p, cred), nil
	} else if err != nil && !errors.Is(err, ErrNotConnected) {
		return nil, err
	}
	if id.subject != "" || id.session != "" {
		// Revocations a Disconnect could not finish, before connecting
		// anew (the outcome is Disconnect's to report).
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c.retryRevocations(rctx, id, p)
		cancel()
	}
	msg := p.Message
	if msg == "" {
		msg = "Connect your " + p.Name + " account"
	}
	opts = append(opts[:len(opts):len(opts)], elicit.WithLink(c.link(p)))
	for try := 0; ; try++ {
		action, err := elicit.URL(ctx, msg, opts...)
		if err != nil {
			return nil, err
		}
		outcome, _ := c.takeOutcome(ctx, id, p)
		if action != elicit.Accept {
			if outcome != "" {
				return nil, &ProviderError{Provider: p.Name, Code: outcome}
			}
			if action == elicit.Decline {
				return nil, ErrDeclined
			}
			return nil, ErrCanceled
		}
		cred, err := c.load(ctx, id, p)
		if errors.Is(err, ErrNotConnected) && try == 0 {
			// An earlier completion of the same call (the -32042 retry
			// of a connection since disconnected): ask again.
			continue
		}
		if err != nil {
			return nil, err
		}
		return c.connection(ctx, id, p, cred), nil
	}
}

// Stored returns the connection of the authenticated user subject to
// provider from the vault, without asking anyone: for code that acts for
// a user outside a tool call (a background job). It is ErrNotConnected
// when the user has no credential that is valid or refreshable.
func (c *Connector) Stored(ctx context.Context, subject, provider string) (*Connection, error) {
	p, ok := c.providers[provider]
	if !ok {
		return nil, errUnknownProvider
	}
	if subject == "" {
		return nil, ErrNoIdentity
	}
	id := identity{subject: subject}
	cred, err := c.load(ctx, id, p)
	if err != nil {
		return nil, err
	}
	if !cred.usable(c.keys.Sealer().Now()) {
		return nil, ErrNotConnected
	}
	return c.connection(ctx, id, p, cred), nil
}

// Save seals t into the vault as the credential of the authenticated user
// subject for provider, replacing any: for credentials obtained elsewhere
// (a migration from another store).
func (c *Connector) Save(ctx context.Context, subject, provider string, t *oauth2.Token) error {
	p, ok := c.providers[provider]
	if !ok {
		return errUnknownProvider
	}
	if subject == "" {
		return ErrNoIdentity
	}
	if t == nil || t.AccessToken == "" && t.RefreshToken == "" {
		return errors.New("oauth: Save needs an access or a refresh token")
	}
	return c.save(ctx, identity{subject: subject}, p, t)
}

// Disconnect deletes the user's credential for provider, waits until no
// node is refreshing it (a refresh that was running revokes what it got
// instead of storing it), and, when the provider has a revocation
// endpoint, revokes its refresh token (or its access token) there (RFC
// 7009). When it returns, no node holds or writes that credential.
//
// A token whose revocation the provider did not confirm is kept, sealed,
// for as long as the credential would have been kept (at most four per
// user and provider), and revoked again by the next Disconnect or
// Connect; the error is returned, but the account is disconnected here.
// Disconnect is ErrNotConnected when there was neither a credential nor a
// kept revocation.
func (c *Connector) Disconnect(ctx context.Context, provider string) error {
	p, ok := c.providers[provider]
	if !ok {
		return errUnknownProvider
	}
	id, err := identityOf(ctx)
	if err != nil {
		return err
	}
	b := id.binding(purposeCredential, p.Name)
	raw, err := c.keys.Take(ctx, c.store, b)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("oauth: store: %w", err)
	}
	taken := err == nil
	if taken {
		for _, k := range c.keys.StoreKeys(b) {
			c.store.Delete(ctx, k)
		}
	}
	if err := c.waitRefresh(ctx, id, p); err != nil {
		return err
	}
	kept, err := c.retryRevocations(ctx, id, p)
	errs := []error{err}
	if taken && p.RevocationURL != "" {
		if cred, err := c.open(id, p, raw); err == nil {
			errs = append(errs, c.revokeKept(ctx, id, p, cred))
		}
	}
	if !taken && !kept {
		return ErrNotConnected
	}
	return errors.Join(errs...)
}

// identity is whom a credential belongs to: the call's authenticated
// user, or else, on a server without authentication, its session.
type identity struct {
	subject string // the authenticated user, or ""
	session string // without a user: the call's session (engine.Identity)
}

// Store bindings: a user's credential is bound to (subject, "u"); a
// session's, on a server without authentication, to ("", session). "u"
// is never a session of engine.Identity (engine.TransportSession,
// engine.LocalSession, engine.Sessionless).
const (
	purposeCredential = "oauth/credential"
	purposeOutcome    = "oauth/outcome"
	purposeLock       = "oauth/refresh-lock"
	purposeRevoke     = "oauth/revocation"
	userScope         = "u"
)

func (id identity) binding(purpose, provider string) envelope.Binding {
	if id.subject != "" {
		return envelope.Binding{Purpose: purpose, Subject: id.subject, SessionID: userScope, RecordID: provider}
	}
	return envelope.Binding{Purpose: purpose, SessionID: id.session, RecordID: provider}
}

// ownerOf is whom the credentials of the call with identity who belong
// to. A stateless HTTP call without a user has no owner: ErrNoIdentity.
func ownerOf(who engine.Identity) (identity, error) {
	switch {
	case who.Subject != "":
		return identity{subject: who.Subject}, nil
	case !who.HasSession():
		return identity{}, ErrNoIdentity
	}
	return identity{session: who.Session}, nil
}

// identity is whom the credentials of the tool call ctx carries belong
// to, from the call's identity as its front-end computed it.
func identityOf(ctx context.Context) (identity, error) {
	p := engine.PeerFrom(ctx)
	if p == nil {
		return identity{}, elicit.ErrNotInstalled
	}
	return ownerOf(p.Call().Who)
}

// claimsIdentity is the identity of a state token's claims.
func claimsIdentity(cl *token.Claims) identity {
	who := engine.ClaimsIdentity(cl)
	if who.Subject != "" {
		return identity{subject: who.Subject}
	}
	return identity{session: who.Session}
}

// link returns the link builder for elicit.URL: it trades the elicitation's
// callback token for an oauth-state token with the same binding and the
// provider, and links to the start page with it.
func (c *Connector) link(p *Provider) func(string) string {
	return func(tok string) string {
		u := *c.start
		cl, err := c.tokens.Verify(tok, token.Expect{Kind: token.URL})
		if err != nil {
			return u.String() // the page says the link is invalid
		}
		ttl := cl.Expiry.Sub(c.keys.Sealer().Now()).Truncate(time.Second)
		if ttl < time.Second {
			ttl = time.Second
		}
		state, err := c.tokens.Issue(&token.Claims{
			Kind: token.OAuthState, SessionID: cl.SessionID, Subject: cl.Subject,
			ElicitationID: cl.ElicitationID, Provider: p.Name,
		}, ttl, token.Compact)
		if err != nil {
			return u.String()
		}
		q := u.Query()
		q.Set("state", state)
		u.RawQuery = q.Encode()
		return u.String()
	}
}

// providerContext is ctx with the HTTP client for the provider.
func (c *Connector) providerContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.hc)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The paths of the OAuth flow of connect_account, when a provider is
// configured.
const (
	pathOAuthStart    = "/oauth/start"
	pathOAuthCallback = "/oauth/callback"
)

// The environment of the OAuth provider: the client's credentials are not
// flags, so that they stay out of process listings.
const (
	envOAuthClientID     = "ELICITVAULT_OAUTH_CLIENT_ID"
	envOAuthClientSecret = "ELICITVAULT_OAUTH_CLIENT_SECRET"
)

const oauthHelp = `With an OAuth 2.0 provider configured, connect_account connects the
user's account there for real (authorization code with PKCE, through URL
mode; elicit/oauth): --oauth-issuer discovers the endpoints of an OpenID
Provider or RFC 8414 authorization server, or --oauth-auth-url and
--oauth-token-url give them. The client is registered at the provider
with the redirect URI <base-url>/oauth/callback; its ID and secret come
from ELICITVAULT_OAUTH_CLIENT_ID and ELICITVAULT_OAUTH_CLIENT_SECRET.
The credential is sealed in the store for the authenticated user, or for
the MCP session when the server has no authentication. Without a
provider, connect_account shows a demonstration consent page and says so.`

// oauthFlags are the flags of the provider.
type oauthFlags struct {
	name, issuer, authURL, tokenURL, revocationURL, scopes *string
}

func addOAuthFlags(fs *flag.FlagSet) *oauthFlags {
	return &oauthFlags{
		name:          fs.String("oauth-provider", "example", "the provider's `name`, in messages and in the vault"),
		issuer:        fs.String("oauth-issuer", "", "discover the OAuth provider at this issuer `URL`"),
		authURL:       fs.String("oauth-auth-url", "", "the provider's authorization endpoint `URL` (without --oauth-issuer)"),
		tokenURL:      fs.String("oauth-token-url", "", "the provider's token endpoint `URL` (without --oauth-issuer)"),
		revocationURL: fs.String("oauth-revocation-url", "", "the provider's RFC 7009 revocation endpoint `URL`, if any"),
		scopes:        fs.String("oauth-scopes", "", "the `scopes` to ask for, separated by spaces or commas"),
	}
}

// configured reports whether any provider flag was given.
func (f *oauthFlags) configured() bool {
	return *f.issuer != "" || *f.authURL != "" || *f.tokenURL != ""
}

// provider builds the provider from the flags and the environment,
// discovering its endpoints at the issuer.
func (f *oauthFlags) provider(ctx context.Context, e *env, fs *flag.FlagSet, base string) (*oauth.Provider, error) {
	id, secret := e.getenv(envOAuthClientID), e.getenv(envOAuthClientSecret)
	if id == "" {
		return nil, usagef(fs, "an OAuth provider needs %s", envOAuthClientID)
	}
	p := &oauth.Provider{
		Name: *f.name,
		Config: &oauth2.Config{
			ClientID: id, ClientSecret: secret, RedirectURL: base + pathOAuthCallback,
			Endpoint: oauth2.Endpoint{AuthURL: *f.authURL, TokenURL: *f.tokenURL},
			Scopes:   strings.FieldsFunc(*f.scopes, func(r rune) bool { return r == ' ' || r == ',' }),
		},
		RevocationURL: *f.revocationURL,
		Message:       "Connect your " + *f.name + " account to elicitvault",
	}
	if *f.issuer != "" {
		if *f.authURL != "" || *f.tokenURL != "" {
			return nil, usagef(fs, "--oauth-issuer and explicit endpoints exclude each other")
		}
		m, err := discover(ctx, *f.issuer)
		if err != nil {
			return nil, err
		}
		p.Issuer, p.RequireIssuer = m.Issuer, m.IssParameterSupported
		p.Config.Endpoint.AuthURL, p.Config.Endpoint.TokenURL = m.AuthorizationEndpoint, m.TokenEndpoint
		if p.RevocationURL == "" {
			p.RevocationURL = m.RevocationEndpoint
		}
	}
	for _, u := range []string{p.Config.Endpoint.AuthURL, p.Config.Endpoint.TokenURL} {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return nil, usagef(fs, "the provider's authorization and token endpoints must be absolute http(s) URLs")
		}
	}
	return p, nil
}

// metadata is the part of a provider's discovery document serve uses.
type metadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
	IssParameterSupported bool   `json:"authorization_response_iss_parameter_supported"`
}

// discover reads the provider's metadata: OpenID Connect Discovery, then
// RFC 8414. The issuer it names must be the one asked for.
func discover(ctx context.Context, issuer string) (*metadata, error) {
	issuer = strings.TrimRight(issuer, "/")
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var lastErr error
	for _, wk := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+wk, nil)
		if err != nil {
			return nil, fmt.Errorf("--oauth-issuer: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		var m metadata
		err = json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			lastErr = fmt.Errorf("%s: HTTP %d", wk, resp.StatusCode)
			continue
		}
		if strings.TrimRight(m.Issuer, "/") != issuer {
			return nil, fmt.Errorf("--oauth-issuer: the metadata names another issuer")
		}
		return &m, nil
	}
	return nil, fmt.Errorf("--oauth-issuer: discovery failed: %w", lastErr)
}

// newConnector returns the Connector of connect_account.
func newConnector(ev *elicit.Elicitor, keys *keyring.Keyring, st store.Store, base string, p *oauth.Provider) (*oauth.Connector, error) {
	return oauth.New(&oauth.Config{Elicitor: ev, StartURL: base + pathOAuthStart}, p)
}

// connectOAuth is connect_account with a provider.
func (r *reference) connectOAuth(ctx context.Context, opts []elicit.Option) (*mcp.CallToolResult, any, error) {
	name := r.provider
	c, err := r.oauth.Connect(ctx, name, opts...)
	var pe *oauth.ProviderError
	switch {
	case err == nil:
	case errors.Is(err, oauth.ErrDeclined):
		return text("Not connected: you declined."), nil, nil
	case errors.As(err, &pe):
		return text("Not connected: %s refused (%s).", name, pe.Code), nil, nil
	case errors.Is(err, oauth.ErrCanceled):
		return text("Not connected: cancelled."), nil, nil
	case errors.Is(err, oauth.ErrNoIdentity):
		return text("Not connected: this call has neither an authenticated user nor an MCP session to keep the account for."), nil, nil
	default:
		return nil, nil, err
	}
	t, err := c.TokenSource.Token()
	if err != nil {
		if errors.As(err, &pe) || errors.Is(err, oauth.ErrNotConnected) {
			return text("Not connected: %s no longer accepts the stored credential; call connect_account again.", name), nil, nil
		}
		return nil, nil, err
	}
	if t.Expiry.IsZero() {
		return text("Your %s account is connected.", name), nil, nil
	}
	return text("Your %s account is connected (the current access token is valid until %s).", name, t.Expiry.UTC().Format(time.RFC3339)), nil, nil
}

// disconnectAccount is the disconnect_account tool, listed with a provider.
func (r *reference) disconnectAccount(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	err := r.oauth.Disconnect(ctx, r.provider)
	switch {
	case errors.Is(err, oauth.ErrNotConnected):
		return text("No %s account was connected.", r.provider), nil, nil
	case errors.Is(err, oauth.ErrNoIdentity):
		return text("Nothing to disconnect: this call has neither an authenticated user nor an MCP session."), nil, nil
	case err != nil:
		return text("Disconnected here, but %s did not confirm the revocation.", r.provider), nil, nil
	}
	return text("Your %s account is disconnected, and the credential revoked.", r.provider), nil, nil
}

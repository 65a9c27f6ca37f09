package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/oidctest"
	"github.com/elicitvault/elicitvault/store"
)

// The known values of the OAuth zero-knowledge test.
const (
	zkOAuthSession  = "zk-session-oauth-3a7f52"
	zkOAuthSubject  = "zk-subject-dee@example.org"
	zkOAuthAccount  = "zk-account-id-7d41e0aa"
	zkOAuthProvider = "zkprovider-c81e"
	zkOAuthMessage  = "zk-message: connect the 51ad service"
)

// providerRecorder is the HTTP transport of the Connector: it keeps every
// secret the server and the provider exchange (code, code verifier, access,
// refresh and ID tokens), to be searched for in the backend.
type providerRecorder struct {
	mu      sync.Mutex
	secrets []string
}

func (r *providerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if q, err := url.ParseQuery(string(peek(&req.Body))); err == nil {
		for _, k := range []string{"code", "code_verifier", "refresh_token", "token"} {
			r.add(q.Get(k))
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if json.Unmarshal(peek(&resp.Body), &v) == nil {
		for _, k := range []string{"access_token", "refresh_token", "id_token"} {
			s, _ := v[k].(string)
			r.add(s)
		}
	}
	return resp, nil
}

// peek reads and returns all of body, a request's or a response's, and
// puts the same bytes back for its reader.
func peek(body *io.ReadCloser) []byte {
	if *body == nil {
		return nil
	}
	b, _ := io.ReadAll(*body)
	(*body).Close()
	*body = io.NopCloser(bytes.NewReader(b))
	return b
}

func (r *providerRecorder) add(s string) {
	if s == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, s)
}

func (r *providerRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.secrets...)
}

// oauthSites starts the web servers of two nodes, start and callback
// (their handlers set by the test; closed when t ends), and an OpenID
// Provider with one client, id and secret, that redirects to callback's
// /oauth/callback (redirect) and issues access tokens of accessTTL.
func oauthSites(t *testing.T, accessTTL time.Duration, id, secret string) (start, callback *httptest.Server, redirect string, prov *oidctest.Provider) {
	t.Helper()
	start = httptest.NewServer(nil)
	t.Cleanup(start.Close)
	callback = httptest.NewServer(nil)
	t.Cleanup(callback.Close)
	redirect = callback.URL + "/oauth/callback"
	prov = oidctest.Start(t, accessTTL, oidctest.Client{ID: id, Secret: secret, RedirectURI: redirect})
	return start, callback, redirect, prov
}

// TestZeroKnowledgeOAuth connects an account through a real OpenID
// Provider, with the flow started on one node and its callback served by
// another, each with a store client of its own on the backend; refreshes
// the access token; disconnects. At every stage neither the backend nor
// the recorded traffic with it holds an access, refresh or ID token, the
// code, the PKCE verifier, the state, the subject, the session ID or the
// provider's account ID.
func TestZeroKnowledgeOAuth(t *testing.T) {
	zkBackends(t, func(t *testing.T, b *zkBackend) {
		keys := keysA(t)
		// Access tokens of 10 s are refreshed 10 s before expiry: at once.
		start, callback, redirect, prov := oauthSites(t, 10*time.Second, "zk-client", "zk client secret 0c5e")
		rec := &providerRecorder{}
		var servers []*mcp.Server
		for i, st := range []store.Store{b.Store, b.Another(t)} {
			ev, err := elicit.New(keys, st, &elicit.Config{TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := oauth.New(&oauth.Config{
				Elicitor: ev, StartURL: start.URL + "/oauth/start",
				HTTPClient: &http.Client{Transport: rec},
			}, &oauth.Provider{
				Name: zkOAuthProvider, Message: zkOAuthMessage,
				Config: &oauth2.Config{ClientID: "zk-client", ClientSecret: "zk client secret 0c5e", Endpoint: prov.Endpoint(),
					RedirectURL: redirect, Scopes: []string{"openid", "offline_access"}},
				Issuer: prov.Issuer, RequireIssuer: true, RevocationURL: prov.Metadata.RevocationEndpoint,
				AuthOptions: []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "consent")},
			})
			if err != nil {
				t.Fatal(err)
			}
			[]*httptest.Server{start, callback}[i].Config.Handler = conn.Handler()
			s := whoamiServer(ev, conn, zkOAuthProvider, prov)
			addTextTool(s, "disconnect", func(ctx context.Context) (string, error) {
				if err := conn.Disconnect(ctx, zkOAuthProvider); err != nil {
					return "", err
				}
				return "disconnected", nil
			})
			servers = append(servers, s)
		}

		links := make(chan string, 1)
		a := connectAs(t, servers[0], zkOAuthSession, zkOAuthSubject, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				links <- req.Params.URL
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		type outcome struct {
			text string
			err  error
		}
		done := make(chan outcome, 1)
		go func() { s, err := callTool(a, "whoami"); done <- outcome{s, err} }()
		link := nextLink(t, links)
		u, _ := url.Parse(link)
		state := u.Query().Get("state")
		forbidden := func() []string {
			return append([]string{zkOAuthSession, zkOAuthSubject, zkOAuthAccount, zkOAuthProvider, zkOAuthMessage, state}, rec.all()...)
		}
		b.CheckNoLeaks(t, "pending", forbidden())

		status, body := oidctest.SignIn(t, link, zkOAuthAccount, false)
		if status != http.StatusOK || !strings.Contains(body, "Account connected") {
			t.Fatalf("callback page: %d %s", status, body)
		}
		select {
		case o := <-done:
			if o.err != nil || o.text != "sub:"+zkOAuthAccount {
				t.Fatalf("tool: %q, %v", o.text, o.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the tool did not return: the callback on the other node did not complete the elicitation")
		}
		if n := prov.Count("grant.success", "refresh_token"); n != 1 {
			t.Fatalf("%d refreshes, want 1", n)
		}
		secrets := rec.all()
		if len(secrets) < 6 {
			t.Fatalf("recorded %d secrets of the provider exchange, want code, verifier, tokens", len(secrets))
		}
		b.CheckNoLeaks(t, "connected and refreshed", forbidden())

		// The other node, the same user: the credential, without asking.
		bc := connectAs(t, servers[1], zkOAuthSession+"-b", zkOAuthSubject, &mcp.ClientOptions{})
		if s, err := callTool(bc, "whoami"); err != nil || s != "sub:"+zkOAuthAccount {
			t.Fatalf("on the other node: %q, %v", s, err)
		}
		if _, err := callTool(bc, "disconnect"); err != nil {
			t.Fatalf("disconnect: %v", err)
		}
		if n := prov.WaitCount("grant.revoked", "", 1); n == 0 {
			t.Errorf("no revocation: %v", prov.Events())
		}
		b.CheckNoLeaks(t, "disconnected", forbidden())
	})
}

// whoamiServer is a node's MCP server with ev installed and the tool
// whoami: it connects the user to provider through conn and says
// "sub:" and the subject that prov's userinfo endpoint gives the token.
func whoamiServer(ev *elicit.Elicitor, conn *oauth.Connector, provider string, prov *oidctest.Provider) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "node", Version: "1"}, nil)
	ev.Install(s)
	addTextTool(s, "whoami", func(ctx context.Context) (string, error) {
		c, err := conn.Connect(ctx, provider)
		if err != nil {
			return "", err
		}
		sub, err := prov.Subject(ctx, oauth2.NewClient(ctx, c.TokenSource))
		return "sub:" + sub, err
	})
	return s
}

// Package oidctest starts a real OpenID Provider for tests:
// node-oidc-provider (OpenID Certified) from interop/oidc-provider.mjs,
// with its development login and consent pages, on a free loopback port.
//
// Start skips the test when node or interop/node_modules is missing, or
// fails it when ELICITVAULT_REQUIRE_NODE=1 (as .ci/run sets).
package oidctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// RequireEnv names the variable that, set to 1, turns a missing node or
// npm package into a test failure instead of a skip.
const RequireEnv = "ELICITVAULT_REQUIRE_NODE"

// Client is a client registration.
type Client struct {
	ID, Secret  string
	RedirectURI string
}

// Provider is a running provider.
type Provider struct {
	Issuer   string
	Metadata Metadata

	mu     sync.Mutex
	events []Event
}

// Metadata is the part of the provider's discovery document the tests use.
type Metadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
	IssParameterSupported bool   `json:"authorization_response_iss_parameter_supported"`
}

// Event is a grant event the provider reported.
type Event struct {
	Event     string `json:"event"`
	GrantType string `json:"grant_type"`
	Error     string `json:"error"`
}

// Start starts a provider with clients and the given access token
// lifetime, stopped when t ends.
func Start(t testing.TB, accessTTL time.Duration, clients ...Client) *Provider {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "interop")
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(filepath.Join(dir, "node_modules", "oidc-provider", "package.json")):
		missing = "interop/node_modules/oidc-provider is missing (run npm ci in interop/)"
	}
	if missing != "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s, and %s=1 requires it", missing, RequireEnv)
		}
		t.Skip(missing + ": skipping the OpenID Provider test")
	}
	var meta []map[string]any
	for _, c := range clients {
		meta = append(meta, map[string]any{
			"client_id": c.ID, "client_secret": c.Secret, "redirect_uris": []string{c.RedirectURI},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		})
	}
	cj, _ := json.Marshal(meta)
	cmd := exec.Command(node, filepath.Join(dir, "oidc-provider.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OIDC_CLIENTS="+string(cj), fmt.Sprintf("OIDC_ACCESS_TTL=%d", int(accessTTL.Seconds())))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &syncWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	p := &Provider{}
	issuer := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "issuer "); ok {
				issuer <- rest
				continue
			}
			var ev Event
			if json.Unmarshal([]byte(line), &ev) == nil {
				p.mu.Lock()
				p.events = append(p.events, ev)
				p.mu.Unlock()
			}
		}
	}()
	select {
	case p.Issuer = <-issuer:
	case <-time.After(20 * time.Second):
		t.Fatalf("the OpenID Provider did not start: %s", stderr.String())
	}
	resp, err := http.Get(p.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&p.Metadata); err != nil {
		t.Fatal(err)
	}
	return p
}

// Endpoint returns the provider's endpoints for golang.org/x/oauth2.
func (p *Provider) Endpoint() oauth2.Endpoint {
	return oauth2.Endpoint{AuthURL: p.Metadata.AuthorizationEndpoint, TokenURL: p.Metadata.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader}
}

// Count returns how many events of kind ev for grant type gt (any when
// empty) the provider reported.
func (p *Provider) Count(ev, gt string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.events {
		if e.Event == ev && (gt == "" || e.GrantType == gt) {
			n++
		}
	}
	return n
}

// Events returns the events so far.
func (p *Provider) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// formAction finds the action of the page's form.
var formAction = regexp.MustCompile(`<form[^>]* action="([^"]+)"`)

// SignIn is the person's part without a browser, for tests that need no
// rendering (the zero-knowledge test): an HTTP client with a cookie jar
// opens link, signs in as login at the provider's login form and consents
// (or, with deny, cancels at the login form), following every redirect.
// It returns the last page's status and body.
func SignIn(t testing.TB, link, login string, deny bool) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	read := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	resp, body := read(c.Get(link))
	submit := func(prompt string, form url.Values) {
		t.Helper()
		m := formAction.FindStringSubmatch(body)
		if m == nil || !strings.Contains(body, `value="`+prompt+`"`) {
			t.Fatalf("no %s form at %s (status %d)", prompt, resp.Request.URL.Path, resp.StatusCode)
		}
		action, err := resp.Request.URL.Parse(html.UnescapeString(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		form.Set("prompt", prompt)
		resp, body = read(c.PostForm(action.String(), form))
	}
	if deny {
		m := regexp.MustCompile(`href="([^"]+/abort)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatal("no cancel link on the login page")
		}
		abort, _ := resp.Request.URL.Parse(html.UnescapeString(m[1]))
		resp, body = read(c.Get(abort.String()))
		return resp.StatusCode, body
	}
	submit("login", url.Values{"login": {login}, "password": {"any password"}})
	submit("consent", url.Values{})
	return resp.StatusCode, body
}

// WaitCount waits up to 5 s for at least n events of kind ev (see Count):
// the provider reports them on its output, shortly after it answered.
func (p *Provider) WaitCount(ev, gt string, n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := p.Count(ev, gt)
		if c >= n || time.Now().After(deadline) {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
}

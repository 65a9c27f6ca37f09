package page_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/internal/browserform"
	"github.com/elicitvault/elicitvault/elicit/internal/page"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// TestEveryPageHeaders requests every kind of HTML page elicitvault serves
// (the consent page, the browser form and its ended page, the OAuth start
// and callback pages, and their error pages) and checks the kit's headers
// on each: a policy that admits the one stylesheet and nothing but the
// page's own script, no framing, no sniffing, no caching, and the
// referrer policy the page's kind calls for.
func TestEveryPageHeaders(t *testing.T) {
	t.Parallel()
	consent, formURL, start, callback := servePages(t)
	fu, _ := url.Parse(formURL)
	action, origin := fu.Scheme+"://"+fu.Host+fu.Path, fu.Scheme+"://"+fu.Host
	answer := func(a string) string { return url.Values{"_nonce": {fu.Query().Get("n")}, "_action": {a}}.Encode() }
	sum := sha256.Sum256([]byte(page.Style))
	styleHash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"

	for _, c := range []struct {
		name, method, url string
		referrer          page.Referrer
		body              string
	}{
		{"consent page, invalid link", "GET", consent + elicit.PagesPrefix + "consent" + "?token=ev1.bogus", page.SameOrigin, ""},
		{"consent page, no token", "POST", consent + elicit.PagesPrefix + "consent", page.SameOrigin, ""},
		{"consent page, wrong method", "PUT", consent + elicit.PagesPrefix + "consent", page.SameOrigin, ""},
		{"browser form", "GET", formURL, page.SameOrigin, ""},
		{"browser form, refused answer", "POST", action, page.SameOrigin, answer("accept")},
		{"browser form, declined", "POST", action, page.SameOrigin, answer("decline")},
		{"browser form, ended", "POST", action, page.SameOrigin, answer("decline")},
		{"OAuth start, invalid link", "GET", start + "/oauth/start", page.NoReferrer, ""},
		{"OAuth callback, invalid state", "GET", callback + "/oauth/callback?state=bogus&code=x", page.NoReferrer, ""},
		{"OAuth callback, wrong method", "POST", callback + "/oauth/callback", page.NoReferrer, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.method == "POST" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("status %d, Content-Type %q", resp.StatusCode, ct)
			}
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "style-src " + styleHash, "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			for k, want := range map[string]string{
				"Referrer-Policy":              string(c.referrer),
				"X-Content-Type-Options":       "nosniff",
				"X-Frame-Options":              "DENY",
				"Cache-Control":                "no-store",
				"Cross-Origin-Opener-Policy":   "same-origin",
				"Cross-Origin-Resource-Policy": "same-origin",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// servePages serves the consent pages of an Elicitor, a browser form, and
// an OAuth Connector's start page and callback, and returns their bases
// (the form's whole URL).
func servePages(t *testing.T) (consent, formURL, start, callback string) {
	keys, err := keyring.New([]byte("page kit test secret, 32 bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	cs := httptest.NewServer(ev.Pages(nil))
	t.Cleanup(cs.Close)

	bf, err := browserform.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bf.Close() })
	p, err := bf.Open(context.Background(), browserform.Form{
		Message: "Which warehouse?",
		Schema: &jsonschema.Schema{Type: "object", Required: []string{"w"}, Properties: map[string]*jsonschema.Schema{
			"w": {Type: "string"},
		}},
		TTL: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}

	web := httptest.NewServer(nil)
	t.Cleanup(web.Close)
	conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: web.URL + "/oauth/start"}, &oauth.Provider{
		Name: "op",
		Config: &oauth2.Config{ClientID: "x", RedirectURL: web.URL + "/oauth/callback",
			Endpoint: oauth2.Endpoint{AuthURL: "http://127.0.0.1:1/auth", TokenURL: "http://127.0.0.1:1/token"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	web.Config.Handler = conn.Handler()
	u, _ := url.Parse(p.URL)
	return cs.URL, u.String(), web.URL, web.URL
}

package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/oidctest"
)

// TestStartPageHost: the start page and the callback answer only a
// request for their own host. A rebound DNS name (evil.example pointing at
// the server) gets neither the flow's cookie nor the redirect to the
// provider; before, the start page answered any Host.
func TestStartPageHost(t *testing.T) {
	e := newEnv(t, 1, time.Hour, nil)
	c := e.connect(0, "alice", mrtr)
	res := c.call("whoami")
	link := wait(t, c.links, "the link")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u, host string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Host = host
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	u, _ := url.Parse(link)
	cb := e.nodes[0].web.URL + "/oauth/callback?state=" + url.QueryEscape(u.Query().Get("state")) + "&code=x"
	for _, host := range []string{"evil.example", "evil.example:" + u.Port(), "localhost:" + u.Port()} {
		if resp := get(link, host); resp.StatusCode != http.StatusMisdirectedRequest || len(resp.Cookies()) != 0 || resp.Header.Get("Location") != "" {
			t.Errorf("start page for Host %s: %d, %d cookies, Location %q", host, resp.StatusCode, len(resp.Cookies()), resp.Header.Get("Location"))
		}
		if resp := get(cb, host); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("callback for Host %s: %d", host, resp.StatusCode)
		}
	}
	if resp := get(link, u.Host); resp.StatusCode != http.StatusFound || len(resp.Cookies()) != 1 {
		t.Errorf("start page for its own host: %d, %d cookies", resp.StatusCode, len(resp.Cookies()))
	}
	// The right host still works: the flow finishes (and the call ends).
	if code, body := oidctest.SignIn(t, link, "alice-account", false); code != http.StatusOK || !strings.Contains(body, "Account connected") {
		t.Errorf("sign-in on the right host: %d", code)
	}
	if got := wait(t, res, "the tool"); got != "sub:alice-account" {
		t.Errorf("tool: %q", got)
	}
}

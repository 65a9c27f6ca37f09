package token_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/elicitvault/elicitvault/internal/token"
)

type recordingResolver struct {
	mu     sync.Mutex
	claims []*token.Claims
	err    error
}

func (r *recordingResolver) ResolveURL(_ context.Context, c *token.Claims) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims = append(r.claims, c)
	return r.err
}

type callbackFixture struct {
	clk      *clock
	svc      *token.Service
	resolver *recordingResolver
	handler  *token.CallbackHandler
	srv      *httptest.Server

	mu   sync.Mutex
	errs []int
}

func newCallbackFixture(t *testing.T) *callbackFixture {
	t.Helper()
	f := &callbackFixture{clk: newClock(), resolver: &recordingResolver{}}
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	f.svc = service(t, keyring(t, f.clk, secretA), st)
	f.handler = &token.CallbackHandler{
		Tokens:   f.svc,
		Resolver: f.resolver,
		User: func(r *http.Request) (string, bool) {
			u := r.Header.Get("X-Test-User")
			return u, u != ""
		},
		OnError: func(_ *http.Request, status int, err error) {
			f.mu.Lock()
			f.errs = append(f.errs, status)
			f.mu.Unlock()
		},
	}
	f.srv = httptest.NewServer(f.handler)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *callbackFixture) do(t *testing.T, method, query, user string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+"/callback?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func checkPage(t *testing.T, body string, h http.Header, leaks ...string) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "no-referrer",
		"Cache-Control":          "no-store",
		"X-Content-Type-Options": "nosniff",
		"Content-Type":           "text/html; charset=utf-8",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "frame-ancestors 'none'", "style-src 'sha256-", "base-uri 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	lower := strings.ToLower(body)
	for _, ext := range []string{"<script", "src=", "href=", "<link", "@import", "url("} {
		if strings.Contains(lower, ext) {
			t.Errorf("page loads or links something: %q", ext)
		}
	}
	for _, l := range leaks {
		if l != "" && strings.Contains(body, l) {
			t.Errorf("page contains %q", l)
		}
	}
}

func TestCallback(t *testing.T) {
	f := newCallbackFixture(t)
	c := typical(token.URL)
	tok, issued := issue(t, f.svc, c, token.Compact)
	leaks := []string{tok, c.SessionID, c.Subject, c.ElicitationID, tok[20:40]}
	q := "token=" + url.QueryEscape(tok)

	// The wrong user is refused before the token is used up.
	status, body, h := f.do(t, "GET", q, "mallory")
	if status != http.StatusForbidden {
		t.Fatalf("wrong user: %d", status)
	}
	checkPage(t, body, h, append(leaks, "mallory")...)
	if status, _, _ := f.do(t, "GET", q, ""); status != http.StatusForbidden {
		t.Fatalf("signed out: %d", status)
	}

	status, body, h = f.do(t, "GET", q, c.Subject)
	if status != http.StatusOK {
		t.Fatalf("right user: %d %s", status, body)
	}
	checkPage(t, body, h, leaks...)
	if len(f.resolver.claims) != 1 || f.resolver.claims[0].ID != issued.ID || f.resolver.claims[0].ElicitationID != c.ElicitationID {
		t.Fatalf("resolver saw %+v", f.resolver.claims)
	}

	// Replayed: 410, with GET or POST.
	for _, m := range []string{"GET", "POST"} {
		status, body, h = f.do(t, m, q, c.Subject)
		if status != http.StatusGone {
			t.Fatalf("replay with %s: %d", m, status)
		}
		checkPage(t, body, h, leaks...)
	}
	if len(f.resolver.claims) != 1 {
		t.Fatal("resolver called twice")
	}
}

func TestCallbackRejections(t *testing.T) {
	f := newCallbackFixture(t)
	c := typical(token.URL)
	c.Subject = ""
	tok, _ := issue(t, f.svc, c, token.Compact)
	oauth, _ := issue(t, f.svc, typical(token.OAuthState), token.Compact)
	expired, _ := issue(t, f.svc, c, token.JWE)
	other := service(t, keyring(t, nil, secretC), nil)
	foreign, _ := issue(t, other, c, token.Compact)
	tampered := tok[:30] + "A" + tok[31:]
	if tok[30] == 'A' {
		tampered = tok[:30] + "B" + tok[31:]
	}

	for _, tc := range []struct {
		name, method, query string
		status              int
	}{
		{"no token", "GET", "", http.StatusBadRequest},
		{"empty token", "GET", "token=", http.StatusBadRequest},
		{"two tokens", "GET", "token=" + tok + "&token=" + tok, http.StatusBadRequest},
		{"tampered", "GET", "token=" + tampered, http.StatusBadRequest},
		{"wrong kind", "GET", "token=" + oauth, http.StatusBadRequest},
		{"unknown key", "GET", "token=" + foreign, http.StatusBadRequest},
		{"junk", "POST", "token=%3Cscript%3Ealert(1)%3C/script%3E", http.StatusBadRequest},
		{"method", "PUT", "token=" + tok, http.StatusMethodNotAllowed},
		{"method", "DELETE", "token=" + tok, http.StatusMethodNotAllowed},
	} {
		status, body, h := f.do(t, tc.method, tc.query, "")
		if status != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, status, tc.status)
		}
		checkPage(t, body, h, tok, oauth, foreign, "<script>alert")
		if tc.status == http.StatusMethodNotAllowed && h.Get("Allow") != "GET, POST" {
			t.Errorf("Allow = %q", h.Get("Allow"))
		}
	}
	f.clk.Add(time.Hour)
	status, body, h := f.do(t, "GET", "token="+expired, "")
	if status != http.StatusGone {
		t.Errorf("expired: %d", status)
	}
	checkPage(t, body, h, expired)
	f.clk.Add(-time.Hour)

	// A token without subject is accepted from any browser (POST works too),
	// and the page is the same for every user.
	if status, _, _ := f.do(t, "POST", "token="+tok, "anyone"); status != http.StatusOK {
		t.Errorf("subject-less token: %d", status)
	}
	if len(f.resolver.claims) != 1 {
		t.Errorf("resolver calls: %d", len(f.resolver.claims))
	}
	if len(f.errs) != 10 {
		t.Errorf("OnError calls: %v", f.errs)
	}
}

func TestCallbackResolverAndStoreErrors(t *testing.T) {
	f := newCallbackFixture(t)
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("elicitation gone: %w", token.ErrExpired), http.StatusGone},
		{errors.New("database on fire"), http.StatusInternalServerError},
	} {
		f.resolver.err = tc.err
		tok, _ := issue(t, f.svc, typical(token.URL), token.Compact)
		status, body, h := f.do(t, "GET", "token="+tok, typical(token.URL).Subject)
		if status != tc.status {
			t.Errorf("%v: %d, want %d", tc.err, status, tc.status)
		}
		checkPage(t, body, h, "database on fire", tok)
	}
	// A Service without a store cannot consume: 500, never 200.
	f.handler.Tokens = service(t, keyring(t, f.clk, secretA), nil)
	f.resolver.err = nil
	tok, _ := issue(t, f.svc, typical(token.URL), token.Compact)
	if status, _, _ := f.do(t, "GET", "token="+tok, typical(token.URL).Subject); status != http.StatusInternalServerError {
		t.Errorf("no store: %d", status)
	}
}

func TestCallbackConfirmFirst(t *testing.T) {
	f := newCallbackFixture(t)
	f.handler.ConfirmFirst = true
	c := typical(token.URL)
	tok, _ := issue(t, f.svc, c, token.Compact)
	q := "token=" + tok
	// GET, as a link scanner would, several times: nothing is consumed.
	for range 3 {
		status, body, h := f.do(t, "GET", q, c.Subject)
		if status != http.StatusOK || !strings.Contains(body, `<form method="post">`) {
			t.Fatalf("confirm page: %d %s", status, body)
		}
		checkPage(t, body, h, tok)
		if !strings.Contains(h.Get("Content-Security-Policy"), "form-action 'self'") {
			t.Error("CSP does not restrict form-action")
		}
	}
	if len(f.resolver.claims) != 0 {
		t.Fatal("GET resolved with ConfirmFirst")
	}
	if status, _, _ := f.do(t, "GET", q, "mallory"); status != http.StatusForbidden {
		t.Fatalf("confirm page for the wrong user: %d", status)
	}
	if status, _, _ := f.do(t, "POST", q, c.Subject); status != http.StatusOK || len(f.resolver.claims) != 1 {
		t.Fatalf("POST: %d", status)
	}
	if status, _, _ := f.do(t, "POST", q, c.Subject); status != http.StatusGone {
		t.Fatalf("second POST: %d", status)
	}
}

func TestCallbackConcurrent(t *testing.T) {
	f := newCallbackFixture(t)
	c := typical(token.URL)
	tok, _ := issue(t, f.svc, c, token.Compact)
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			req := httptest.NewRequest("GET", "/cb?token="+tok, nil)
			req.Header.Set("X-Test-User", c.Subject)
			rec := httptest.NewRecorder()
			f.handler.ServeHTTP(rec, req)
			mu.Lock()
			counts[rec.Code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts[http.StatusOK] != 1 || counts[http.StatusGone] != 49 {
		t.Fatalf("status counts %v", counts)
	}
}

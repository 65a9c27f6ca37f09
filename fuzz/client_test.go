package fuzz

import (
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit/client"
)

// FuzzCheckURL: a link of URL mode the client accepts is printable ASCII,
// https (or http to a loopback address), without user information, with
// the host it reports and within the allowlist; anything else is refused
// with ErrRefusedURL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?b=c#d", "http://127.0.0.1:8080/cb", "http://[::1]/", "http://localhost/",
		"https://a.example.com:8443/", "http://example.com/", "https://u:p@example.com/", "https://example.com@evil.test/",
		"https://exämple.com/", "https://xn--exmple-cua.com/", "javascript:alert(1)", "https://ex%61mple.com/",
		"https://example.com/\u202e", "HTTPS://EXAMPLE.COM", "http://127.0.0.1.evil.test/", "https://[::ffff:127.0.0.1]/",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, restrict bool) {
		var allowed []string
		if restrict {
			allowed = []string{"*.example.com", "login.test"}
		}
		u, err := client.CheckURL(raw, allowed)
		if err != nil {
			if !errors.Is(err, client.ErrRefusedURL) {
				t.Fatalf("%q: %v is not ErrRefusedURL", raw, err)
			}
			return
		}
		for i := 0; i < len(raw); i++ {
			if raw[i] <= 0x20 || raw[i] >= 0x7f {
				t.Fatalf("%q accepted with a byte %#x", raw, raw[i])
			}
		}
		p, err := url.Parse(raw)
		if err != nil || p.User != nil {
			t.Fatalf("%q accepted: %v, user %v", raw, err, p.User)
		}
		host := strings.ToLower(p.Hostname())
		switch strings.ToLower(p.Scheme) {
		case "https":
		case "http":
			a, err := netip.ParseAddr(host)
			if host != "localhost" && (err != nil || !a.Unmap().IsLoopback()) {
				t.Fatalf("%q accepted: http to %s", raw, host)
			}
		default:
			t.Fatalf("%q accepted: scheme %s", raw, p.Scheme)
		}
		if !strings.HasPrefix(u.Host, host) && !strings.HasPrefix(u.Host, "["+host) {
			t.Fatalf("%q: reported host %q, parsed %q", raw, u.Host, host)
		}
		if restrict {
			h := strings.TrimSuffix(host, ".")
			if h != "login.test" && !strings.HasSuffix(h, ".example.com") {
				t.Fatalf("%q accepted outside the allowlist", raw)
			}
		}
	})
}

// FuzzFieldParse: what a line prompt reads is either refused or a value
// the form accepts.
func FuzzFieldParse(f *testing.F) {
	form, err := client.NewFormRequest("m", json.RawMessage(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "Ada", "ada@example.com", "2026-05-04", "1e3", "-0", "NaN", "Inf", "yes", "r", "Red", "2", "a, b", "1,1", ","} {
		f.Add(uint8(0), s)
	}
	f.Fuzz(func(t *testing.T, i uint8, s string) {
		fd := &form.Fields[int(i)%len(form.Fields)]
		v, err := fd.Parse(s)
		if err != nil {
			return
		}
		if err := form.Check(map[string]any{fd.Name: v}); err != nil && strings.HasPrefix(err.Error(), "elicit: content at /"+fd.Name+" ") {
			t.Fatalf("%s: %q parsed to %v, which the form refuses: %v", fd.Name, s, v, err)
		}
	})
}

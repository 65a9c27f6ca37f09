package client_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/form/formtest"
)

// FuzzCheckURL: a link of URL mode the client accepts is shown as it is
// opened: the returned link is printable ASCII, https (or http to a
// loopback address), without user information, its host as the standard
// library reads it is the reported host, in canonical form (an address
// in its canonical spelling, a name only of letters, digits, '-', '_'
// and dots that does not end in a number), within the allowlist, and
// checking it again gives the same link. Anything else is refused with
// ErrRefusedURL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?b=c#d", "http://127.0.0.1:8080/cb", "http://[::1]/", "http://localhost/",
		"https://a.example.com:8443/", "http://example.com/", "https://u:p@example.com/", "https://example.com@evil.test/",
		"https://exämple.com/", "https://xn--exmple-cua.com/", "javascript:alert(1)", "https://ex%61mple.com/",
		"https://example.com/\u202e", "HTTPS://EXAMPLE.COM", "http://127.0.0.1.evil.test/", "https://[::ffff:127.0.0.1]/",
		"https://2130706433/", "https://0x7f.1/", "https://1.1/", "http://0177.1:80/", "https://a*b.example.com/",
		"https://example.com./", "https://0x.0x.0/", "https://00000000000000000001/", "https://example.com:0443",
		"https://xn--ls8h.la/", "https://a\\b/", "https://1.2.3.4.5/", "https://login.test./x", "https://a..example.com/",
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
			if raw[i] <= 0x20 || raw[i] >= 0x7f || raw[i] == '\\' {
				t.Fatalf("%q accepted with a byte %#x", raw, raw[i])
			}
		}
		for i := 0; i < len(u.URL); i++ {
			if c := u.URL[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
				t.Fatalf("%q: link %q has a byte %#x", raw, u.URL, c)
			}
		}
		p, err := url.Parse(u.URL)
		if err != nil || p.User != nil || p.Host != u.Host {
			t.Fatalf("%q: link %q, host %q; net/url reads %+v, %v", raw, u.URL, u.Host, p, err)
		}
		host := p.Hostname()
		a, aErr := netip.ParseAddr(host)
		switch p.Scheme {
		case "https":
		case "http":
			if host != "localhost" && host != "localhost." && (aErr != nil || !a.Unmap().IsLoopback()) {
				t.Fatalf("%q accepted: http to %s", raw, host)
			}
		default:
			t.Fatalf("%q accepted: scheme %s", raw, p.Scheme)
		}
		if aErr == nil {
			if a.String() != host {
				t.Fatalf("%q: address %q not in canonical form", raw, host)
			}
		} else {
			name := strings.TrimSuffix(host, ".")
			if strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" || strings.Contains(name, "..") {
				t.Fatalf("%q: host %q", raw, host)
			}
			last := name[strings.LastIndexByte(name, '.')+1:]
			if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
				t.Fatalf("%q: host %q ends in a number but is not an address", raw, host)
			}
		}
		if restrict {
			h := strings.TrimSuffix(host, ".")
			if h != "login.test" && !strings.HasSuffix(h, ".example.com") {
				t.Fatalf("%q accepted outside the allowlist (host %q)", raw, host)
			}
		}
		again, err := client.CheckURL(u.URL, allowed)
		if err != nil || again.URL != u.URL || again.Host != u.Host {
			t.Fatalf("%q: link %q checked again: %+v, %v", raw, u.URL, again, err)
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
		if err != nil || v == nil {
			return
		}
		if err := form.Check(map[string]any{fd.Name: v}); err != nil && strings.HasPrefix(err.Error(), "elicit: content at /"+fd.Name+" ") {
			t.Fatalf("%s: %q parsed to %v, which the form refuses: %v", fd.Name, s, v, err)
		}
	})
}

// fuzzSchema is a form with every field kind.
const fuzzSchema = formtest.EveryKind

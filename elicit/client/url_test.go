package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit/client"
)

// The host shown and checked is the one the browser connects to (WHATWG
// URL host parsing), and the link opened is spelled with it.
func TestCheckURLHostAsBrowser(t *testing.T) {
	for _, tc := range []struct {
		url, link, host string // host "" = refused
		allowed         []string
	}{
		{"https://2130706433/", "https://127.0.0.1/", "127.0.0.1", nil},
		{"https://0x7f.1/x?y", "https://127.0.0.1/x?y", "127.0.0.1", nil},
		{"https://1.1/", "https://1.0.0.1/", "1.0.0.1", nil},
		{"https://0177.0.0.01/", "https://127.0.0.1/", "127.0.0.1", nil},
		{"https://0x7F000001./", "https://127.0.0.1/", "127.0.0.1", nil},
		{"http://2130706433:8080/cb", "http://127.0.0.1:8080/cb", "127.0.0.1:8080", nil},
		{"http://0x7f.1/", "http://127.0.0.1/", "127.0.0.1", nil},
		{"https://example.com:443/p", "https://example.com/p", "example.com", nil},
		{"https://example.com:0443/p", "https://example.com/p", "example.com", nil},
		{"https://example.com", "https://example.com/", "example.com", nil},
		{"https://[0:0::1]:8443/", "https://[::1]:8443/", "[::1]:8443", nil},
		{"https://a_b.example.com/", "https://a_b.example.com/", "a_b.example.com", nil},
		// Spelled like an allowed host, but elsewhere, or nowhere.
		{"https://2130706433/", "", "", []string{"example.com", "*.example.com"}},
		{"https://1.1/", "", "", []string{"1.1.example.com", "*.1"}},
		{"https://1.1/", "https://1.0.0.1/", "1.0.0.1", []string{"1.0.0.1"}},
		{"https://0x7f.1/", "https://127.0.0.1/", "127.0.0.1", []string{"127.1"}},
		{"https://a*b.example.com/", "", "", []string{"*.example.com"}},
		{"https://*.example.com/", "", "", []string{"*.example.com"}},
		{"https://a%2eb.example.com/", "", "", []string{"*.example.com"}},
		{"https://a..example.com/", "", "", []string{"*.example.com"}},
		{"https://a!b.example.com/", "", "", nil},
		{"https://1.2.3.4.5/", "", "", nil},
		{"https://256.0.0.1/", "", "", nil},
		{"https://1.2.3.256/", "https://1.2.4.0/", "", nil},
		{"https://4294967296/", "", "", nil},
		{"https://09.1.2.3/", "", "", nil},
		{"https://example.0x/", "", "", nil},
		{"https://example.123/", "", "", nil},
		{"https://xn--/", "", "", nil},
		{"https://xn--a/", "", "", nil},                // decodes to nothing non-ASCII
		{"https://xn--zz-zzzzzzzzzzzzz/", "", "", nil}, // not punycode
		{"https://xn--exmple-cua.com/", "https://xn--exmple-cua.com/", "xn--exmple-cua.com", nil},
		{"https://evil.test\\@example.com/", "", "", nil},
		{"https://example.com:99999/", "", "", nil},
		{"https://example.com:-1/", "", "", nil},
		{"https://[::1%25eth0]/", "", "", nil},
		{"https://[1.2.3.4]/", "", "", nil},
		{"https:evil.test/", "", "", nil},
		{"https:/evil.test/", "", "", nil},
		{"https://" + strings.Repeat("a", 64) + ".com/", "", "", nil},
	} {
		checkURL(t, tc.url, tc.allowed, tc.host, tc.link)
	}
}

// checkURL checks CheckURL(raw, allowed): refused with ErrRefusedURL when
// host is "", else accepted with that host and, unless link is "", that
// link.
func checkURL(t *testing.T, raw string, allowed []string, host, link string) {
	t.Helper()
	u, err := client.CheckURL(raw, allowed)
	switch {
	case host == "" && err == nil:
		t.Errorf("%q: accepted (host %s), want refused", raw, u.Host)
	case host == "" && !errors.Is(err, client.ErrRefusedURL):
		t.Errorf("%q: %v, want ErrRefusedURL", raw, err)
	case host != "" && err != nil:
		t.Errorf("%q: %v", raw, err)
	case host != "" && (u.Host != host || link != "" && u.URL != link):
		t.Errorf("%q: host %q, link %q; want %q, %q", raw, u.Host, u.URL, host, link)
	}
}

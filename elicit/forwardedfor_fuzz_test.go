package elicit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
)

// FuzzForwardedFor reads arbitrary X-Forwarded-For headers and peer
// addresses. It must never panic; a peer that is not a trusted proxy is
// the client whatever the header says; behind a trusted proxy the client
// is an address the header or the peer holds.
func FuzzForwardedFor(f *testing.F) {
	for _, s := range [][2]string{
		{"10.0.0.1:1", "198.51.100.1"}, {"10.0.0.1:1", "203.0.113.9, 198.51.100.1, 10.2.2.2"},
		{"192.0.2.1:1", "198.51.100.1"}, {"[fd00::1]:1", "2001:db8::1"}, {"10.0.0.1:1", "junk,,  ,"},
		{"10.0.0.1:1", "[::1]:80, 1.2.3.4:5"}, {"nonsense", "1.1.1.1"}, {"[::ffff:10.0.0.1]:9", "::ffff:1.2.3.4"},
	} {
		f.Add(s[0], s[1])
	}
	client := elicit.ForwardedFor(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"))
	f.Fuzz(func(t *testing.T, peer, xff string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		got := client(r)
		a, err := netip.ParseAddr(peer) // net/http writes ip:port; a bare address is accepted too
		if ap, perr := netip.ParseAddrPort(peer); perr == nil {
			a, err = ap.Addr(), nil
		}
		a = a.Unmap()
		trusted := err == nil && (netip.MustParsePrefix("10.0.0.0/8").Contains(a) || netip.MustParsePrefix("fd00::/8").Contains(a))
		if !trusted {
			if got != peer {
				t.Fatalf("untrusted peer %q: client %q", peer, got)
			}
			return
		}
		if _, err := netip.ParseAddrPort(got); err != nil {
			t.Fatalf("peer %q, X-Forwarded-For %q: client %q is no address", peer, xff, got)
		}
	})
}

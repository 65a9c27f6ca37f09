// Package clientid tells apart the clients of an HTTP front-end that have
// no authenticated user, by their address (behind the trusted proxies, by
// what those forwarded), for the session caps of the go-sdk front-end and
// the pending quotas of both front-ends (engine.WithClientID).
package clientid

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// Of returns how a front-end finds the address of a request's client
// behind the proxies trusted: nil (the peer address) without proxies.
func Of(trusted []netip.Prefix) func(*http.Request) string {
	if len(trusted) == 0 {
		return nil
	}
	return ForwardedFor(trusted...)
}

// ForwardedFor returns the client of a request behind proxies: for a
// request whose peer address is in trusted, the client is
// the rightmost address of X-Forwarded-For that is not itself in trusted;
// for any other request, the peer address. Only list proxies that
// overwrite or append to X-Forwarded-For: a client can write anything in
// the header, and only the addresses your proxies appended are true.
func ForwardedFor(trusted ...netip.Prefix) func(*http.Request) string {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		peer, ok := peerAddr(r.RemoteAddr)
		if !ok || !isTrusted(peer) {
			return r.RemoteAddr
		}
		client := peer
		hops := r.Header.Values("X-Forwarded-For")
		for i := len(hops) - 1; i >= 0; i-- {
			parts := strings.Split(hops[i], ",")
			for j := len(parts) - 1; j >= 0; j-- {
				a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
				if err != nil {
					// Not an address our proxies wrote: stop at the
					// last one they did.
					return netip.AddrPortFrom(client, 0).String()
				}
				client = a
				if !isTrusted(a) {
					return netip.AddrPortFrom(client, 0).String()
				}
			}
		}
		return netip.AddrPortFrom(client, 0).String()
	}
}

// peerAddr parses an address as net/http sets RemoteAddr ("ip:port").
func peerAddr(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// Addr is the key of the client of r without an authenticated user: the
// address client returns (Of; r.RemoteAddr when client is nil). An IPv6
// address counts as its /64, which one host usually holds whole.
func Addr(r *http.Request, client func(*http.Request) string) string {
	addr := r.RemoteAddr
	if client != nil {
		addr = client(r)
	}
	a, ok := peerAddr(addr)
	if !ok {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			return "h:" + host
		}
		return "h:" + addr
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return "a:" + p.String()
	}
	return "a:" + a.String()
}

// Handler wraps h, so that its requests carry their client's identity,
// id(r) (engine.WithClientID), which the pending quotas count an
// unauthenticated call on a stateless server against.
func Handler(id func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(engine.WithClientID(r.Context(), id(r))))
	})
}

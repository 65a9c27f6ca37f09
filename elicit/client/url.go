package client

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// URLRequest is a link the server asks the user to open.
type URLRequest struct {
	Server  string // the server's name, as it introduced itself (unverified)
	Message string
	// URL is the full link, as it will be opened: printable ASCII only,
	// with its host in the form of Host. It may differ from the link the
	// server sent in the spelling of its host ("https://0x7f.1/" is
	// opened, and shown, as "https://127.0.0.1/").
	URL string
	// Host is the host the browser will connect to, with its port if not
	// the scheme's default: a name in lower case, an internationalized
	// one in its punycode (xn--) form; an IPv4 address in dotted decimal;
	// an IPv6 address in brackets. It is what the user must check, and
	// what a UI highlights.
	Host          string
	ElicitationID string
}

// maxURLLength bounds the length of a link of URL mode.
const maxURLLength = 8192

// checkURL checks a link of URL mode: an absolute https URL (or http to a
// loopback address: localhost, 127.0.0.0/8, ::1), without user
// information, in printable ASCII without '\' (so an internationalized
// host must come in its punycode form, and no invisible or bidirectional
// character can hide part of it), with a host that can be real, in
// allowed when allowed is not empty ("example.com" matches that host,
// "*.example.com" any name under it, an address only itself).
//
// The host is parsed as a browser parses it (WHATWG URL): a host that
// ends in a number is an IPv4 address in any of the forms browsers accept
// ("2130706433", "0x7f.1", "127.1") or is refused; the checks, the
// returned Host and the returned URL all use its canonical form, so what
// the user sees is where the browser goes. A name with anything but
// letters, digits, '-', '_' and dots ('*', '%', a space...), an empty
// label, or an xn-- label that is not valid punycode is refused. Errors
// match ErrRefused.
func checkURL(raw string, allowed []string) (*URLRequest, error) {
	bad := func(why string) error { return fmt.Errorf("%w: %s", errRefusedURL, why) }
	if len(raw) > maxURLLength {
		return nil, bad("too long")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c >= 0x7f {
			return nil, bad("not printable ASCII (an internationalized host must be sent in its punycode form)")
		}
	}
	if strings.Contains(raw, "\\") {
		return nil, bad("a backslash, which browsers read as a slash")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return nil, bad("not an absolute URL")
	}
	scheme = strings.ToLower(scheme)
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if strings.Contains(authority, "@") {
		return nil, bad("it carries user information, which can disguise the host")
	}
	hostPart, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && i > strings.LastIndexByte(authority, ']') {
		hostPart, port = authority[:i], authority[i+1:]
	}
	host, isIP, err := canonicalHost(hostPart)
	if err != nil {
		return nil, bad("no valid host")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 || strings.Trim(port, "0123456789") != "" {
			return nil, bad("no valid port")
		}
		port = strconv.Itoa(n)
	}
	switch scheme {
	case "https":
		if port == "443" {
			port = ""
		}
	case "http":
		if port == "80" {
			port = ""
		}
		if !loopback(host) {
			return nil, bad("http is allowed only to a loopback address; use https")
		}
	default:
		return nil, bad("only https links are opened")
	}
	if len(allowed) > 0 && !allowedHost(host, isIP, allowed) {
		return nil, bad("the host " + host + " is not in the allowlist")
	}
	shown := host
	if port != "" {
		shown += ":" + port
	}
	if tail == "" {
		tail = "/"
	}
	link := scheme + "://" + shown + tail
	// The standard library must read the same host: the link is opened
	// by programs that parse it with their own rules.
	u, err := url.Parse(link)
	if err != nil || u.User != nil || !strings.EqualFold(u.Host, shown) {
		return nil, bad("not an absolute URL")
	}
	return &URLRequest{URL: link, Host: shown}, nil
}

func loopback(host string) bool {
	if host == "localhost" || host == "localhost." {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}

// allowedHost matches a canonical host against the allowlist: a name
// against names ("*.example.com" for any name under example.com), an
// address against addresses, each in canonical form.
func allowedHost(host string, isIP bool, allowed []string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, a := range allowed {
		a = strings.ToLower(a)
		if rest, ok := strings.CutPrefix(a, "*."); ok {
			if !isIP && strings.HasSuffix(host, "."+strings.TrimSuffix(rest, ".")) {
				return true
			}
			continue
		}
		c, aIP, err := canonicalHost(a)
		if err == nil && aIP == isIP && strings.TrimSuffix(c, ".") == host {
			return true
		}
	}
	return false
}

// OpenBrowser opens a link in the system browser: the program named by
// $BROWSER if set (its first entry, split on spaces, the link as the last
// argument), else xdg-open, open (macOS) or the URL handler of Windows.
// The link is one argument of a program run directly, never a shell's
// input. OpenBrowser does not wait for the browser to exit.
func OpenBrowser(ctx context.Context, link string) error {
	var argv []string
	if b := os.Getenv("BROWSER"); b != "" {
		argv = strings.Fields(strings.Split(b, string(os.PathListSeparator))[0])
	}
	if len(argv) == 0 {
		switch runtime.GOOS {
		case "darwin":
			argv = []string{"open"}
		case "windows":
			argv = []string{"rundll32", "url.dll,FileProtocolHandler"}
		default:
			argv = []string{"xdg-open"}
		}
	}
	cmd := exec.Command(argv[0], append(argv[1:], link)...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

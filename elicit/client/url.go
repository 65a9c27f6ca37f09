package client

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// URLRequest is a link the server asks the user to open.
type URLRequest struct {
	Server  string // the server's name, as it introduced itself (unverified)
	Message string
	// URL is the full link, as it will be opened: printable ASCII only.
	URL string
	// Host is the link's host (with its port, if any), lower-case, an
	// internationalized name in its punycode (xn--) form: what the user
	// must check, and what a UI highlights.
	Host          string
	ElicitationID string
}

// MaxURLLength bounds the length of a link of URL mode.
const MaxURLLength = 8192

// CheckURL checks a link of URL mode: an absolute https URL (or http to a
// loopback address: localhost, 127.0.0.0/8, ::1), without user
// information, in printable ASCII (so an internationalized host must come
// in its punycode form, and no invisible or bidirectional character can
// hide part of it), with a host in allowed when allowed is not empty
// ("example.com" matches that host, "*.example.com" any host under it).
// Errors match ErrRefusedURL.
func CheckURL(raw string, allowed []string) (*URLRequest, error) {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrRefusedURL, why) }
	if len(raw) > MaxURLLength {
		return nil, bad("too long")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c >= 0x7f {
			return nil, bad("not printable ASCII (an internationalized host must be sent in its punycode form)")
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, bad("not an absolute URL")
	}
	if u.User != nil {
		return nil, bad("it carries user information, which can disguise the host")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || strings.Contains(u.Host, "%") {
		return nil, bad("no plain host")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !loopback(host) {
			return nil, bad("http is allowed only to a loopback address; use https")
		}
	default:
		return nil, bad("only https links are opened")
	}
	if len(allowed) > 0 && !allowedHost(strings.TrimSuffix(host, "."), allowed) {
		return nil, bad("the host " + host + " is not in the allowlist")
	}
	shown := host
	if p := u.Port(); p != "" {
		shown = net.JoinHostPort(host, p)
	}
	return &URLRequest{URL: raw, Host: shown}, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func allowedHost(host string, allowed []string) bool {
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.ToLower(a), ".")
		if rest, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+rest) {
				return true
			}
		} else if host == a {
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

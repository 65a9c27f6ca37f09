package client

import (
	"errors"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode"

	"github.com/elicitvault/elicitvault/internal/termtext"
)

// The host of a link, parsed as a browser parses it (the host parser of
// the WHATWG URL Standard), so that the host shown and checked is the one
// the browser will connect to: "2130706433", "0x7f.1" and "127.1" are all
// 127.0.0.1 to a browser, "1.1" is 1.0.0.1. Beyond what a browser accepts,
// a name that cannot be a real host (characters outside letters, digits,
// '-' and '_', such as '*'; an empty or too long label; a malformed xn--
// label) is refused.

var errHost = errors.New("not a valid host")

// canonicalHost returns the host as the browser will use it: an IPv4
// address in dotted decimal, an IPv6 address in brackets in its RFC 5952
// form, or a lower-case ASCII name (punycode labels checked, not decoded).
// ip reports an address.
func canonicalHost(h string) (host string, ip bool, err error) {
	if h == "" {
		return "", false, errHost
	}
	if h[0] == '[' {
		if h[len(h)-1] != ']' {
			return "", false, errHost
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false, errHost
		}
		return "[" + a.String() + "]", true, nil
	}
	h = strings.ToLower(h)
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if last == "" && len(labels) > 1 {
		last = labels[len(labels)-2]
	}
	if endsInNumber(last) {
		a, err := parseIPv4(h)
		if err != nil {
			return "", false, err
		}
		return a.String(), true, nil
	}
	if len(strings.TrimSuffix(h, ".")) > 253 {
		return "", false, errHost
	}
	for i, l := range labels {
		if l == "" && i == len(labels)-1 && i > 0 {
			break // one trailing dot: the root
		}
		if l == "" || len(l) > 63 {
			return "", false, errHost
		}
		for j := 0; j < len(l); j++ {
			if c := l[j]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", false, errHost
			}
		}
		if rest, ok := strings.CutPrefix(l, "xn--"); ok && !validPunycodeLabel(rest) {
			return "", false, errHost
		}
	}
	return h, false, nil
}

// endsInNumber is the WHATWG "ends in a number" check of the last label:
// digits, or 0x followed by hex digits. A host that ends in a number is
// an IPv4 address to a browser, or invalid.
func endsInNumber(l string) bool {
	if l == "" {
		return false
	}
	if strings.Trim(l, "0123456789") == "" {
		return true
	}
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return false
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal,
// octal (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseIPv4(h string) (netip.Addr, error) {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, errHost
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := ipv4Number(p)
		if err != nil {
			return netip.Addr{}, err
		}
		if i < len(parts)-1 && n > 255 {
			return netip.Addr{}, errHost
		}
		nums[i] = n
	}
	lastMax := uint64(1) << (8 * (5 - len(parts)))
	if nums[len(nums)-1] >= lastMax {
		return netip.Addr{}, errHost
	}
	v := nums[len(nums)-1]
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

func ipv4Number(p string) (uint64, error) {
	if p == "" {
		return 0, errHost
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x"):
		p, base = p[2:], 16
		if p == "" {
			return 0, nil
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > math.MaxUint32 {
		return 0, errHost
	}
	return n, nil
}

// validPunycodeLabel reports whether s (a label without its xn-- prefix)
// decodes (RFC 3492) to a label with at least one non-ASCII character,
// made only of letters, marks, digits and hyphens: what IDNA allows, at
// the least.
func validPunycodeLabel(s string) bool {
	rs, ok := punycodeDecode(s)
	if !ok {
		return false
	}
	nonASCII := false
	for _, r := range rs {
		if r >= 0x80 {
			nonASCII = true
		}
		if !(unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || r == '-') || termtext.Hidden(r) {
			return false
		}
	}
	return nonASCII
}

// punycodeDecode decodes s as RFC 3492 punycode.
func punycodeDecode(s string) ([]rune, bool) {
	const (
		base, tmin, tmax, skew, damp = 36, 1, 26, 38, 700
		maxInt                       = math.MaxInt32
	)
	var out []rune
	pos := 0
	if b := strings.LastIndexByte(s, '-'); b >= 0 {
		for i := 0; i < b; i++ {
			if s[i] >= 0x80 {
				return nil, false
			}
			out = append(out, rune(s[i]))
		}
		pos = b + 1
	}
	n, i, bias := 128, 0, 72
	for first := true; pos < len(s); first = false {
		oldi, w := i, 1
		for k := base; ; k += base {
			if pos == len(s) {
				return nil, false
			}
			c := s[pos]
			pos++
			var digit int
			switch {
			case 'a' <= c && c <= 'z':
				digit = int(c - 'a')
			case 'A' <= c && c <= 'Z':
				digit = int(c - 'A')
			case '0' <= c && c <= '9':
				digit = int(c-'0') + 26
			default:
				return nil, false
			}
			if digit > (maxInt-i)/w {
				return nil, false
			}
			i += digit * w
			t := k - bias
			if t < tmin {
				t = tmin
			} else if t > tmax {
				t = tmax
			}
			if digit < t {
				break
			}
			if w > maxInt/(base-t) {
				return nil, false
			}
			w *= base - t
		}
		// adapt the bias
		delta := i - oldi
		if first {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / (len(out) + 1)
		k := 0
		for delta > ((base-tmin)*tmax)/2 {
			delta /= base - tmin
			k += base
		}
		bias = k + (base-tmin+1)*delta/(delta+skew)

		if i/(len(out)+1) > maxInt-n {
			return nil, false
		}
		n += i / (len(out) + 1)
		i %= len(out) + 1
		if n > unicode.MaxRune || 0xD800 <= n && n <= 0xDFFF || len(out) >= 63 {
			return nil, false
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	return out, true
}

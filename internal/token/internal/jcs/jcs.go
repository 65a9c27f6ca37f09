// Package jcs canonicalises JSON as RFC 8785 (JSON Canonicalization Scheme)
// specifies: no insignificant whitespace, object members sorted by the
// UTF-16 code units of their names, numbers as IEEE 754 doubles in the
// ECMAScript shortest round-trip form, strings with the minimal escaping.
//
// Input must be I-JSON (RFC 7493): valid UTF-8, no duplicate member names,
// numbers that fit a double. Anything else is an error, never a guess.
package jcs

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects.
const MaxDepth = 64

// ErrInvalid is returned for input that is not a single I-JSON value.
var ErrInvalid = errors.New("jcs: not canonicalisable JSON")

// Append appends the canonical form of the JSON value in src to dst. On
// error it returns dst as it was.
func Append(dst, src []byte) ([]byte, error) {
	p := parser{src: src}
	p.space()
	out, ok := p.value(dst, 0)
	p.space()
	if !ok || p.i != len(src) {
		return dst[:len(dst):len(dst)], ErrInvalid
	}
	return out, nil
}

// parser reads one JSON value from src, writing its canonical form as it
// goes: one pass, and no allocation for an object whose members are in
// order and a string without escapes.
type parser struct {
	src []byte
	i   int
}

func (p *parser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(dst []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.src) {
		return dst, false
	}
	switch c := p.src[p.i]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return dst, false
		}
		if c == '{' {
			return p.object(dst, depth+1)
		}
		return p.array(dst, depth+1)
	case c == '"':
		s, ok := p.string()
		if !ok {
			return dst, false
		}
		return appendString(dst, s), true
	case c == '-' || c >= '0' && c <= '9':
		return p.number(dst)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(p.src[p.i:], []byte(lit)) {
			p.i += len(lit)
			return append(dst, lit...), true
		}
	}
	return dst, false
}

func (p *parser) array(dst []byte, depth int) ([]byte, bool) {
	p.i++ // [
	dst = append(dst, '[')
	p.space()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		return append(dst, ']'), true
	}
	for {
		var ok bool
		if dst, ok = p.value(dst, depth); !ok {
			return dst, false
		}
		more, ok := p.separator(']')
		switch {
		case !ok:
			return dst, false
		case !more:
			return append(dst, ']'), true
		}
		dst = append(dst, ',')
	}
}

// separator reads what follows an element or a member: a comma, when more
// follow, or close, which ends the array or object.
func (p *parser) separator(close byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.src) {
		return false, false
	}
	switch p.src[p.i] {
	case ',':
		p.i++
		p.space()
		return true, true
	case close:
		p.i++
		return false, true
	}
	return false, false
}

// member is an object member written to the output: its name, decoded,
// and where `"name":value` begins and ends in the output.
type member struct {
	name       []byte
	start, end int
}

func (p *parser) object(dst []byte, depth int) ([]byte, bool) {
	p.i++ // {
	dst = append(dst, '{')
	p.space()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return append(dst, '}'), true
	}
	var stack [8]member
	members := stack[:0]
	sorted := true
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return dst, false
		}
		name, ok := p.string()
		if !ok {
			return dst, false
		}
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return dst, false
		}
		p.i++
		p.space()
		if n := len(members); n > 0 {
			switch compareNames(members[n-1].name, name) {
			case 0:
				return dst, false // duplicate member name
			case 1:
				sorted = false
			}
			dst = append(dst, ',')
		}
		m := member{name: name, start: len(dst)}
		dst = appendString(dst, name)
		dst = append(dst, ':')
		if dst, ok = p.value(dst, depth); !ok {
			return dst, false
		}
		m.end = len(dst)
		members = append(members, m)
		more, ok := p.separator('}')
		if !ok {
			return dst, false
		}
		if !more {
			break
		}
	}
	if !sorted {
		from := members[0].start // before sorting: the first written
		slices.SortFunc(members, func(a, b member) int { return compareNames(a.name, b.name) })
		for k := 1; k < len(members); k++ {
			if compareNames(members[k-1].name, members[k].name) == 0 {
				return dst, false // duplicate member name
			}
		}
		written := bytes.Clone(dst[from:])
		dst = dst[:from]
		for k, m := range members {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, written[m.start-from:m.end-from]...)
		}
	}
	return append(dst, '}'), true
}

// compareNames orders two member names by their UTF-16 code units, as
// RFC 8785 sorts them. UTF-8's byte order is the order of code points,
// which differs from UTF-16's only where a character above U+FFFF (two
// surrogates, from U+D800) meets one from U+E000 to U+FFFF.
func compareNames(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return cmpInt(int(a[0]), int(b[0]))
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			return cmpInt(utf16Key(ra), utf16Key(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmpInt(len(a), len(b))
}

// utf16Key is a code point's place in UTF-16 order: a character above
// U+FFFF sorts by its surrogates, all below U+E000.
func utf16Key(r rune) int {
	if r > 0xFFFF {
		hi, lo := utf16.EncodeRune(r)
		return int(hi)<<16 | int(lo)
	}
	return int(r) << 16
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// string reads a JSON string at p.i and returns its value, as UTF-8: the
// input's own bytes when the string has no escape. It fails on a control
// character, invalid UTF-8, a bad escape and a lone surrogate.
func (p *parser) string() ([]byte, bool) {
	p.i++ // "
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			s := p.src[start:p.i]
			p.i++
			return s, true
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, n := utf8.DecodeRune(p.src[p.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			p.i += n
		}
	}
	return nil, false
}

// escapedString goes on with a string from its first escape, at p.i,
// decoding it into a new slice.
func (p *parser) escapedString(start int) ([]byte, bool) {
	s := append([]byte(nil), p.src[start:p.i]...)
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			return s, true
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return nil, false
			}
			e := p.src[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				s = append(s, e)
			case 'b':
				s = append(s, '\b')
			case 'f':
				s = append(s, '\f')
			case 'n':
				s = append(s, '\n')
			case 'r':
				s = append(s, '\r')
			case 't':
				s = append(s, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok || r >= 0xDC00 && r <= 0xDFFF {
					return nil, false // a low surrogate without a high one
				}
				if r >= 0xD800 && r <= 0xDBFF {
					if p.i+1 >= len(p.src) || p.src[p.i] != '\\' || p.src[p.i+1] != 'u' {
						return nil, false
					}
					p.i += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return nil, false
					}
					r = utf16.DecodeRune(r, lo)
				}
				s = utf8.AppendRune(s, r)
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			s = append(s, c)
			p.i++
		default:
			r, n := utf8.DecodeRune(p.src[p.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			s = append(s, p.src[p.i:p.i+n]...)
			p.i += n
		}
	}
	return nil, false
}

// hex4 reads the four hexadecimal digits of a \u escape.
func (p *parser) hex4() (rune, bool) {
	if len(p.src)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.src[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

// number reads a JSON number (RFC 8259's grammar) and writes its
// canonical form.
func (p *parser) number(dst []byte) ([]byte, bool) {
	start := p.i
	if p.src[p.i] == '-' {
		p.i++
	}
	digits := p.digits()
	switch {
	case digits == 0:
		return dst, false
	case digits > 1 && p.src[p.i-digits] == '0':
		return dst, false // a leading zero
	}
	integer := true
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return dst, false
		}
		integer = false
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return dst, false
		}
		integer = false
	}
	lit := p.src[start:p.i]
	if integer && digits <= 15 {
		// Exact as a double, and written by ECMAScript as it is; but -0
		// is 0.
		if string(lit) == "-0" {
			return append(dst, '0'), true
		}
		return append(dst, lit...), true
	}
	out, err := appendNumber(dst, string(lit))
	return out, err == nil
}

// digits skips a run of decimal digits and returns its length.
func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// appendNumber writes the double nearest to the literal as ECMAScript's
// Number.prototype.toString does (RFC 8785 section 3.2.2.3).
func appendNumber(dst []byte, lit string) ([]byte, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, ErrInvalid
	}
	if f == 0 { // also -0
		return append(dst, '0'), nil
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	// Exponent form: shortest digits d1.d2…e±x, with no leading zero in x.
	b := strconv.AppendFloat(nil, f, 'e', -1, 64)
	e := bytes.IndexByte(b, 'e')
	mant, exp := b[:e], b[e+1:]
	dst = append(dst, mant...)
	dst = append(dst, 'e', exp[0])
	exp = bytes.TrimLeft(exp[1:], "0")
	return append(dst, exp...), nil
}

// appendString writes s with RFC 8785's minimal escaping: the quote, the
// backslash and the control characters, with the short forms where JSON
// has them.
func appendString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= 0x20:
			dst = append(dst, c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
	}
	return append(dst, '"')
}

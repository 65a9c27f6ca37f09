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
	"encoding/json"
	"errors"
	"io"
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

// Append appends the canonical form of the JSON value in src to dst.
func Append(dst, src []byte) ([]byte, error) {
	if !utf8.Valid(src) || !validEscapes(src) {
		return dst, ErrInvalid
	}
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	dst, err := value(dst, d, 0)
	if err != nil {
		return dst, ErrInvalid
	}
	if _, err := d.Token(); err != io.EOF { // exactly one value
		return dst, ErrInvalid
	}
	return dst, nil
}

func value(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	t, err := d.Token()
	if err != nil {
		return dst, err
	}
	return appendToken(dst, d, t, depth)
}

func appendToken(dst []byte, d *json.Decoder, t json.Token, depth int) ([]byte, error) {
	switch v := t.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case json.Number:
		return appendNumber(dst, string(v))
	case string:
		return appendString(dst, v), nil
	case json.Delim:
		if depth >= MaxDepth {
			return dst, ErrInvalid
		}
		switch v {
		case '[':
			return array(dst, d, depth+1)
		case '{':
			return object(dst, d, depth+1)
		}
	}
	return dst, ErrInvalid
}

func array(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; ; i++ {
		t, err := d.Token()
		if err != nil {
			return dst, err
		}
		if t == json.Delim(']') {
			return append(dst, ']'), nil
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendToken(dst, d, t, depth); err != nil {
			return dst, err
		}
	}
}

type member struct {
	key   string
	units []uint16
	value []byte
}

func object(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	var members []member
	for {
		t, err := d.Token()
		if err != nil {
			return dst, err
		}
		if t == json.Delim('}') {
			break
		}
		k, ok := t.(string)
		if !ok {
			return dst, ErrInvalid
		}
		v, err := value(nil, d, depth)
		if err != nil {
			return dst, err
		}
		members = append(members, member{key: k, units: utf16.Encode([]rune(k)), value: v})
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			if slices.Equal(members[i-1].units, m.units) {
				return dst, ErrInvalid // duplicate member name
			}
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}'), nil
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

func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
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

// validEscapes reports whether every \u escape of a surrogate in src is
// part of a high-low pair. encoding/json would turn a lone surrogate into
// U+FFFD, which I-JSON forbids and other canonicalisers do not do.
func validEscapes(src []byte) bool {
	inString := false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 >= len(src) {
				return false
			}
			if src[i+1] != 'u' {
				i++ // skip the escaped character
				continue
			}
			r, ok := hex4(src[i+2:])
			if !ok {
				return false
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return false // low surrogate without a high one
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(src) || src[i+1] != '\\' || src[i+2] != 'u' {
					return false
				}
				lo, ok := hex4(src[i+3:])
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(v), err == nil
}

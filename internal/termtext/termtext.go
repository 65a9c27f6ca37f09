// Package termtext makes text that someone else controls (an MCP server's
// messages, errors, results) safe to write to a terminal.
//
// A terminal acts on more than printable text: escape sequences move the
// cursor, clear the screen, set the window title (OSC 0/2), write the
// clipboard (OSC 52), draw hyperlinks whose target differs from their text
// (OSC 8), change colours or hide text; C1 controls do the same in one
// byte; bidirectional overrides reorder what is shown; and invisible
// letters (the Hangul fillers) or zero-width characters make text look
// blank or split it without a trace. Clean removes all of these.
package termtext

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Marker replaces what Clean removes, so that the reader sees that
// something was there.
const Marker = '\uFFFD'

// Clean returns s fit to write to a terminal. Kept: printable characters,
// spaces, newlines and tabs. Each escape sequence (CSI, OSC, DCS, SOS, PM,
// APC and the two-byte ones, introduced by ESC or by their C1 control),
// up to its terminator or to the end of s, becomes one U+FFFD, and so does
// each other control character (C0 except newline and tab, DEL, C1),
// format character (bidirectional overrides, isolates and marks,
// zero-width spaces and joiners, the BOM, tags), line or paragraph
// separator, invisible filler letter, and byte that is not UTF-8.
//
// Clean is idempotent, and its result contains no byte below 0x20 other
// than '\n' and '\t', no DEL, no C1 control and no invalid UTF-8.
func Clean(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			b.WriteRune(Marker)
			i++
			continue
		}
		if r == 0x1b || (r >= 0x80 && r <= 0x9f) {
			i += sequence(s[i:])
			b.WriteRune(Marker)
			continue
		}
		if Hidden(r) {
			b.WriteRune(Marker)
		} else {
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

func isClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || r <= 0x9f || Hidden(r) {
			return false
		}
		i += n
	}
	return true
}

// Hidden reports whether r is not shown as itself on a terminal: a
// control character other than '\n' and '\t', a format character (Cf:
// bidirectional controls, zero-width characters, tags...), a line or
// paragraph separator, an invisible letter (the Hangul fillers, the
// braille blank, the Khmer inherent vowels, the combining grapheme
// joiner).
func Hidden(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', // Hangul fillers
		'\u2800',           // braille pattern blank
		'\u17B4', '\u17B5', // Khmer inherent vowels
		'\u034F',           // combining grapheme joiner
		'\u2028', '\u2029': // line and paragraph separators
		return true
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// sequence returns the length in bytes of the control or escape sequence
// at the start of s, which starts with ESC or a C1 control (UTF-8
// encoded). An unterminated string sequence runs to the end of s.
func sequence(s string) int {
	var kind byte // the sequence's introducer, as its 7-bit final: '[', ']', 'P', 'X', '^', '_'
	i := 0
	if s[0] == 0x1b {
		if len(s) == 1 {
			return 1
		}
		c := s[1]
		switch {
		case c == '[' || c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			kind, i = c, 2
		case c >= 0x20 && c <= 0x2f: // nF: intermediates, then a final byte
			i = 2
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
				i++
			}
			if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
				i++
			}
			return i
		case c >= 0x30 && c <= 0x7e: // Fp, Fe, Fs: ESC and one byte
			return 2
		default:
			return 1
		}
	} else {
		r, n := utf8.DecodeRuneInString(s)
		switch r {
		case 0x9b:
			kind = '['
		case 0x9d:
			kind = ']'
		case 0x90:
			kind = 'P'
		case 0x98:
			kind = 'X'
		case 0x9e:
			kind = '^'
		case 0x9f:
			kind = '_'
		default:
			return n
		}
		i = n
	}
	if kind == '[' {
		// Parameters and intermediates, then a final byte; anything
		// else ends the sequence where it is.
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	}
	// A control string: up to ST (ESC \ or U+009C), or BEL for OSC.
	for i < len(s) {
		switch {
		case s[i] == 0x07 && kind == ']':
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i // a new sequence starts: this one ends here
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// Writer returns a writer that writes to w what it is given, each Write
// passed through Clean. An escape sequence split across two Writes is
// cleaned as two pieces, each harmless.
func Writer(w io.Writer) io.Writer { return &writer{w} }

type writer struct{ w io.Writer }

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, Clean(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

package termtext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	const m = string(Marker)
	for _, c := range []struct{ in, want string }{
		{"plain text\n\twith tab", "plain text\n\twith tab"},
		{"héllo 世界 ✓", "héllo 世界 ✓"},
		{"a\x1b[31mred\x1b[0m", "a" + m + "red" + m},
		{"a\x1b[?1049h", "a" + m},
		{"\x1b]2;pwned\x07after", m + "after"},
		{"\x1b]0;pwned\x1b\\after", m + "after"},
		{"\x1b]52;c;aGVsbG8=\x07x", m + "x"},
		{"\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", m + "click" + m},
		{"\x1b]2;unterminated title", m},
		{"\x1bPqpayload\x1b\\x", m + "x"},
		{"\x1b_apc\x1b\\x", m + "x"},
		{"\x1b^pm\x1b\\x", m + "x"},
		{"\x1bXsos\x1b\\x", m + "x"},
		{"\x1bcreset", m + "reset"},
		{"\x1b(0x", m + "x"},
		{"\u009b31mred", m + "red"},
		{"\u009d2;title\u009cafter", m + "after"},
		{"\u0090dcs\u009cafter", m + "after"},
		{"\u0085nel", m + "nel"},
		{"bell\a cr\r bs\b del\x7f nul\x00", "bell" + m + " cr" + m + " bs" + m + " del" + m + " nul" + m},
		{"abc\u202edcba", "abc" + m + "dcba"},
		{"\u2066iso\u2069 \u200e\u200f\u061c", m + "iso" + m + " " + m + m + m},
		{"zero\u200bwidth\u200d\ufeff", "zero" + m + "width" + m + m},
		{"hangul\u115f\u1160\u3164\uffa0", "hangul" + m + m + m + m},
		{"tag\U000E0041", "tag" + m},
		{"bad\xffutf8\xc2", "bad" + m + "utf8" + m},
		{"raw\x9bc1", "raw" + m + "c1"},
		{"line\u2028sep", "line" + m + "sep"},
		{"keep \ufffd as is", "keep \ufffd as is"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	n, err := w.Write([]byte("x\x1b]2;t\x07y"))
	if err != nil || n != 8 || b.String() != "x"+string(Marker)+"y" {
		t.Errorf("Write: %d, %v, %q", n, err, b.String())
	}
}

// checkClean fails if out could act on a terminal.
func checkClean(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Clean(%q) = %q: not UTF-8", in, out)
	}
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || Hidden(r) {
			t.Fatalf("Clean(%q) = %q: keeps %U", in, out, r)
		}
	}
	if Clean(out) != out {
		t.Fatalf("Clean is not idempotent on %q", in)
	}
	// What was printable stays: every visible character of the output
	// was in the input.
	if strings.Count(out, string(Marker)) == 0 && out != in {
		t.Fatalf("Clean(%q) = %q changed text without a marker", in, out)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b[31mred", "\x1b]2;title\x07", "\x1b]52;c;AAAA\x1b\\", "\x1b]8;;http://x/\x1b\\l\x1b]8;;\x1b\\",
		"\x1bPdcs", "\u009b1m", "\u009d0;t\u009c", "\u202eabc", "\u3164\u115f", "\xff\xfe", "a\r\nb", "\x1b", "\x1b[", "\x1b]",
		"\x1b(B", "\u2066x\u2069", "\U000E0001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkClean(t, s, Clean(s))
	})
}

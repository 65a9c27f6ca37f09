package redis

import (
	"slices"
	"testing"
)

func TestScanCursorText(t *testing.T) {
	for _, c := range []scanCursor{
		{next: 17},
		{next: 1<<64 - 1, pending: []string{"a"}},
		{next: 3, pending: []string{"k1", "\x00.\xff", "{}"}},
		{done: true, pending: []string{"last"}},
	} {
		text := c.String()
		got, ok := parseCursor(text)
		if !ok || got.next != c.next || got.done != c.done || !slices.Equal(got.pending, c.pending) {
			t.Errorf("parseCursor(%q) = %+v, %v; want %+v", text, got, ok, c)
		}
	}
	if s := (scanCursor{done: true}).String(); s != "" {
		t.Errorf("the cursor of an ended scan is %q, want \"\"", s)
	}
	for _, bad := range []string{"x", "1.", "end.!", "-1", "1..a", "end.", "1.a.b c"} {
		if c, ok := parseCursor(bad); ok {
			t.Errorf("parseCursor(%q) = %+v, want an error", bad, c)
		}
	}
}

func TestGlobEscape(t *testing.T) {
	if got, want := globEscape(`a*b?c[d]e\f`), `a\*b\?c\[d\]e\\f`; got != want {
		t.Errorf("globEscape = %q, want %q", got, want)
	}
}

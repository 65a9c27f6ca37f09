package httpbody

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPeek holds that the handler after a check reads the body whole,
// whether the check read it all or stopped at its bound.
func TestPeek(t *testing.T) {
	for _, c := range []struct {
		body string
		max  int64
		ok   bool
	}{
		{"", 4, true},
		{"abcd", 4, true},
		{"abcdef", 4, false},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		got, ok := Peek(r, c.max)
		if ok != c.ok || (ok && string(got) != c.body) {
			t.Errorf("Peek(%q, %d) = %q, %v", c.body, c.max, got, ok)
		}
		rest, err := io.ReadAll(r.Body)
		if err != nil || string(rest) != c.body {
			t.Errorf("after Peek(%q, %d) the body reads %q, %v", c.body, c.max, rest, err)
		}
	}
}

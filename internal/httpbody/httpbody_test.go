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

// TestPeekTwice: a second check's Peek of a body read whole returns the
// same bytes without reading them again, and the handler still reads the
// whole body; one that something read in between is read again from
// where it is.
func TestPeekTwice(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	r := httptest.NewRequest("POST", "/", strings.NewReader(body))
	first, ok := Peek(r, 1<<20)
	if !ok || string(first) != body {
		t.Fatalf("Peek = %q, %v", first, ok)
	}
	allocs := testing.AllocsPerRun(10, func() {
		again, ok := Peek(r, 1<<20)
		if !ok || string(again) != body {
			t.Fatalf("second Peek = %q, %v", again, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("a second Peek allocates %v times: it read the body again", allocs)
	}
	if short, ok := Peek(r, 4); ok || len(short) != 5 {
		t.Errorf("Peek with a smaller max = %q, %v: want its first 5 bytes, not ok", short, ok)
	}
	if rest, err := io.ReadAll(r.Body); err != nil || string(rest) != body {
		t.Errorf("after the Peeks the body reads %q, %v", rest, err)
	}

	r = httptest.NewRequest("POST", "/", strings.NewReader(body))
	Peek(r, 1<<20)
	head := make([]byte, 3)
	if _, err := io.ReadFull(r.Body, head); err != nil {
		t.Fatal(err)
	}
	if got, ok := Peek(r, 1<<20); !ok || string(got) != body[3:] {
		t.Errorf("Peek after 3 bytes read = %q, %v; want the rest", got, ok)
	}
}

// TestPeekContentLength: the buffer is sized by Content-Length, but what
// the body holds is what counts, whether the header says less or more.
func TestPeekContentLength(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	for _, cl := range []int64{-1, 0, 3, int64(len(body)), 1000, 1 << 40} {
		for _, max := range []int64{4, int64(len(body)) - 1, int64(len(body)), 1 << 20} {
			r := httptest.NewRequest("POST", "/", strings.NewReader(body))
			r.ContentLength = cl
			got, ok := Peek(r, max)
			want := int64(len(body)) <= max
			if ok != want || (ok && string(got) != body) || (!ok && string(got) != body[:max+1]) {
				t.Errorf("Content-Length %d, max %d: Peek = %q, %v", cl, max, got, ok)
			}
			if rest, err := io.ReadAll(r.Body); err != nil || string(rest) != body {
				t.Errorf("Content-Length %d, max %d: the body reads %q, %v", cl, max, rest, err)
			}
		}
	}
}

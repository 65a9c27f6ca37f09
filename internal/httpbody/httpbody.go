// Package httpbody reads the body of an HTTP request ahead of its
// handler, for the checks the front-ends run in front of an SDK's
// handler (a requestState, inputResponses, routing headers).
package httpbody

import (
	"bytes"
	"io"
	"net/http"
)

// Peek reads r's body, up to max bytes, and puts it back, so that the
// handler after the check reads the whole body as it came. ok is false
// when the body could not be read or is longer than max: the check then
// lets the request pass unchecked. A second check's Peek of a body that
// an earlier one read whole, and nothing has read since, returns the same
// bytes without reading or copying them again; the caller must not
// modify them.
func Peek(r *http.Request, max int64) (body []byte, ok bool) {
	if p, ok := r.Body.(*peeked); ok && p.whole && p.unread() && int64(len(p.body)) <= max {
		return p.body, true
	}
	body, err := readUpTo(r.Body, max+1, r.ContentLength)
	rest := r.Body
	p := &peeked{body: body, head: bytes.NewReader(body), Closer: rest, whole: err == nil && int64(len(body)) <= max}
	if p.whole {
		p.Reader = p.head // rest is at its end
	} else {
		p.Reader = io.MultiReader(p.head, rest)
	}
	r.Body = p
	return body, p.whole
}

// readUpTo reads r until its end or n bytes, into a buffer sized for
// size bytes (the Content-Length, or -1 when unknown) when that is under
// n, so that a body of the announced length is read without growing it.
func readUpTo(r io.Reader, n, size int64) ([]byte, error) {
	c := int64(512)
	if size >= 0 && size < n {
		c = size + 1 // the read that finds the end needs room
	}
	b := make([]byte, 0, c)
	for int64(len(b)) < n {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m := min(int64(cap(b)), n)
		k, err := r.Read(b[len(b):m])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// peeked is a body put back by Peek.
type peeked struct {
	io.Reader
	io.Closer
	body  []byte
	head  *bytes.Reader
	whole bool // body is all of it: the rest is at its end
}

// unread reports whether nothing has read the body since Peek.
func (p *peeked) unread() bool { return p.head.Len() == len(p.body) }

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
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	rest := r.Body
	p := &peeked{body: body, head: bytes.NewReader(body), Closer: rest, whole: err == nil && int64(len(body)) <= max}
	p.Reader = io.MultiReader(p.head, rest)
	r.Body = p
	return body, p.whole
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

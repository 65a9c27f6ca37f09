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
// lets the request pass unchecked.
func Peek(r *http.Request, max int64) (body []byte, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	return body, err == nil && int64(len(body)) <= max
}

package elicit

import (
	"io"
	"net/http"
	"time"
)

// defaultReadTimeout and defaultWriteTimeout are the per-request
// deadlines of Handler (HandlerOptions.ReadTimeout, WriteTimeout).
const (
	defaultReadTimeout  = 30 * time.Second
	defaultWriteTimeout = 30 * time.Second
)

// withDeadlines gives every request of h a deadline for its body (read)
// and each write of its response a deadline of its own (write), through
// http.ResponseController: a slow body or a client that stops reading
// cannot hold a connection, while a response may stream for as long as
// its writes go through. Between writes no deadline runs (HTTP/2 would
// reset a stream whose write deadline passed even with nothing to write).
func withDeadlines(h http.Handler, read, write time.Duration) http.Handler {
	if read == 0 {
		read = defaultReadTimeout
	}
	if write == 0 {
		write = defaultWriteTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if read > 0 {
			if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
				if rc.SetReadDeadline(time.Now().Add(read)) == nil {
					r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
				}
			} else {
				// Nothing to read: lift the server's ReadTimeout, which
				// would cancel a long stream's context when it passes.
				rc.SetReadDeadline(time.Time{})
			}
		}
		if write > 0 && rc.SetWriteDeadline(time.Time{}) == nil {
			w = &deadlineWriter{ResponseWriter: w, rc: rc, d: write}
			// What is left in the buffer is written after the handler
			// returns.
			defer rc.SetWriteDeadline(time.Now().Add(write))
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body has been read.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter sets a write deadline around each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	defer w.rc.SetWriteDeadline(time.Time{})
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) Flush() {
	w.FlushError()
}

func (w *deadlineWriter) FlushError() error {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	defer w.rc.SetWriteDeadline(time.Time{})
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

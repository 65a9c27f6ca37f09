package integration

import (
	"sync"
	"testing"
	"time"
)

// user is the person behind a test client, whatever its SDK: the answers
// it gives, in order (A, the SDK's elicitation result), what it was asked
// (P, the SDK's elicitation params), the completion notifications its
// client got, and the browser that opens an accepted URL-mode link.
type user[A, P any] struct {
	t        *testing.T
	mu       sync.Mutex
	answers  []A
	asked    []P
	complete chan string
	// visit, when set, opens the URL of a URL-mode elicitation after the
	// client replied, as a browser would.
	visit func(u string)
}

func newUser[A, P any](t *testing.T) user[A, P] {
	return user[A, P]{t: t, complete: make(chan string, 8)}
}

// answer queues answers for the next elicitations; one with no answer
// left is cancelled.
func (u *user[A, P]) answer(res ...A) {
	u.mu.Lock()
	u.answers = append(u.answers, res...)
	u.mu.Unlock()
}

// setVisit sets the function that opens the URL of an accepted URL-mode
// elicitation (nil: none is opened).
func (u *user[A, P]) setVisit(visit func(u string)) {
	u.mu.Lock()
	u.visit = visit
	u.mu.Unlock()
}

func (u *user[A, P]) elicitations() []P {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]P(nil), u.asked...)
}

// take records that the user was asked p and returns the next answer
// (ok false when none is left) and the browser.
func (u *user[A, P]) take(p P) (a A, ok bool, visit func(string)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, p)
	if len(u.answers) > 0 {
		a, u.answers, ok = u.answers[0], u.answers[1:], true
	}
	return a, ok, u.visit
}

// open opens link with visit a little after the client replied.
func open(visit func(string), link string) {
	go func() {
		time.Sleep(20 * time.Millisecond)
		visit(link)
	}()
}

// completed records a completion notification of elicitation id.
func (u *user[A, P]) completed(id string) { u.complete <- id }

// waitComplete waits for the completion notification of elicitation id.
func (u *user[A, P]) waitComplete(id string) {
	u.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case got := <-u.complete:
			if got == id {
				return
			}
		case <-timeout:
			u.t.Fatalf("no notifications/elicitation/complete for the elicitation within 15s")
		}
	}
}

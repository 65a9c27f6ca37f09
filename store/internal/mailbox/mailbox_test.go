package mailbox

import (
	"testing"

	"github.com/elicitvault/elicitvault/store"
)

func drain(b *Box) (data int, notices int) {
	for {
		select {
		case m := <-b.ch:
			if m.Resubscribed {
				notices++
			} else {
				data++
			}
		default:
			return
		}
	}
}

func TestOverflowBecomesOneNotice(t *testing.T) {
	b := New()
	for range Size + 10 {
		b.Deliver(store.Message{Data: []byte("x")})
	}
	data, notices := drain(b)
	if data != Size || notices != 1 {
		t.Fatalf("got %d data and %d notices, want %d and 1", data, notices, Size)
	}
	// After the subscriber caught up, a new overflow gets a new notice.
	for range Size + 1 {
		b.Deliver(store.Message{Data: []byte("y")})
	}
	if data, notices := drain(b); data != Size || notices != 1 {
		t.Fatalf("second overflow: %d data, %d notices", data, notices)
	}
}

func TestNoticeNotRepeatedWhileBuffered(t *testing.T) {
	b := New()
	b.Deliver(store.Message{Resubscribed: true})
	b.Deliver(store.Message{Resubscribed: true})
	if data, notices := drain(b); data != 0 || notices != 1 {
		t.Fatalf("%d data, %d notices, want one notice", data, notices)
	}
	// Once received, the next resubscription is announced again.
	b.Deliver(store.Message{Resubscribed: true})
	if _, notices := drain(b); notices != 1 {
		t.Fatal("a new resubscription was not announced")
	}
}

func TestDataIsCopied(t *testing.T) {
	b := New()
	p := []byte("abc")
	b.Deliver(store.Message{Data: p})
	p[0] = 'X'
	if m := <-b.ch; string(m.Data) != "abc" {
		t.Fatalf("got %q", m.Data)
	}
}

func TestCloseOnce(t *testing.T) {
	b := New()
	if !b.Close() || b.Close() {
		t.Fatal("Close did not report the first close only")
	}
	b.Deliver(store.Message{Data: []byte("after")}) // must not panic
	if _, ok := <-b.C(); ok {
		t.Fatal("channel open after Close")
	}
}

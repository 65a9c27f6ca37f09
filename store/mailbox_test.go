package store

import (
	"testing"
)

func drain(b *mailbox) (data int, notices int) {
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
	b := newMailbox()
	for range mailboxSize + 10 {
		b.deliver(Message{Data: []byte("x")})
	}
	data, notices := drain(b)
	if data != mailboxSize || notices != 1 {
		t.Fatalf("got %d data and %d notices, want %d and 1", data, notices, mailboxSize)
	}
	// After the subscriber caught up, a new overflow gets a new notice.
	for range mailboxSize + 1 {
		b.deliver(Message{Data: []byte("y")})
	}
	if data, notices := drain(b); data != mailboxSize || notices != 1 {
		t.Fatalf("second overflow: %d data, %d notices", data, notices)
	}
}

func TestNoticeNotRepeatedWhileBuffered(t *testing.T) {
	b := newMailbox()
	b.deliver(Message{Resubscribed: true})
	b.deliver(Message{Resubscribed: true})
	if data, notices := drain(b); data != 0 || notices != 1 {
		t.Fatalf("%d data, %d notices, want one notice", data, notices)
	}
	// Once received, the next resubscription is announced again.
	b.deliver(Message{Resubscribed: true})
	if _, notices := drain(b); notices != 1 {
		t.Fatal("a new resubscription was not announced")
	}
}

func TestDataIsCopied(t *testing.T) {
	b := newMailbox()
	p := []byte("abc")
	b.deliver(Message{Data: p})
	p[0] = 'X'
	if m := <-b.ch; string(m.Data) != "abc" {
		t.Fatalf("got %q", m.Data)
	}
}

func TestCloseOnce(t *testing.T) {
	b := newMailbox()
	if !b.close() || b.close() {
		t.Fatal("Close did not report the first close only")
	}
	b.deliver(Message{Data: []byte("after")}) // must not panic
	if _, ok := <-b.ch; ok {
		t.Fatal("channel open after Close")
	}
}

package engine

import (
	"testing"
)

func TestIdentitySessions(t *testing.T) {
	s := TransportSession("abc")
	if id, ok := TransportID(s); !ok || id != "abc" {
		t.Fatalf("TransportID(%q) = %q, %v", s, id, ok)
	}
	l1, l2 := LocalSession(), LocalSession()
	if l1 == l2 {
		t.Fatal("two local sessions are one")
	}
	for _, sess := range []string{l1, Sessionless} {
		if _, ok := TransportID(sess); ok {
			t.Errorf("%q read as a transport session", sess)
		}
	}
	// No session kind can pass for another: a transport whose session ID
	// looks like a local one is still a transport session.
	if TransportSession(l1[2:]) == l1 || TransportSession("") == Sessionless {
		t.Error("a transport session equals a session of another kind")
	}
	if (Identity{Session: Sessionless}).HasSession() || !(Identity{Session: l1}).HasSession() {
		t.Error("HasSession is wrong")
	}
}

func TestIdentityClient(t *testing.T) {
	for _, c := range []struct {
		id     Identity
		client string
		want   string
	}{
		{Identity{Subject: "alice", Session: TransportSession("x")}, "10.0.0.1", "u:alice"},
		{Identity{Session: TransportSession("x")}, "10.0.0.1", "s:x"},
		{Identity{Session: Sessionless}, "a:10.0.0.1", "c:a:10.0.0.1"},
		{Identity{Session: Sessionless}, "", "c:"},
	} {
		if got := c.id.Client(c.client); got != c.want {
			t.Errorf("%+v.Client(%q) = %q, want %q", c.id, c.client, got, c.want)
		}
	}
}

func TestIdentityBinding(t *testing.T) {
	id := Identity{Subject: "alice", Session: TransportSession("x")}
	b := id.Binding("elicit/pending", "e1")
	if b.Purpose != "elicit/pending" || b.Subject != "alice" || b.SessionID != "s:x" || b.RecordID != "e1" {
		t.Fatalf("Binding = %+v", b)
	}
}

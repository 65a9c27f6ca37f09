package redis_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// replyCutter is a TCP proxy to the test server that, once armed, drops
// the next reply the server sends and cuts that connection: the command
// ran, and the client never hears of it.
type replyCutter struct {
	ln     net.Listener
	armed  atomic.Bool
	cut    atomic.Int32
	target string
}

func newReplyCutter(t *testing.T, target string) *replyCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyCutter{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *replyCutter) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	go func() {
		io.Copy(server, client)
		server.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if p.armed.CompareAndSwap(true, false) {
				p.cut.Add(1)
				break
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	client.Close()
	server.Close()
}

// TestTakeRetryAfterLostReply cuts the connection right after Redis ran a
// Take, before its reply reaches the client. go-redis sends the command
// again on a new connection; that retry must return the value the first
// run took (GETDEL's retry found nothing: the value was gone for good).
func TestTakeRetryAfterLostReply(t *testing.T) {
	raw := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newReplyCutter(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	s, _ := openStore(t, u.String())
	ctx := t.Context()

	// The script is loaded (EVALSHA's first NOSCRIPT answered) before the
	// reply that matters is cut.
	if _, err := s.Take(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Take of a missing key: %v", err)
	}
	for i := range 3 {
		key := "k" + string(rune('a'+i))
		value := []byte("answer " + key)
		if err := s.Put(ctx, key, value, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		proxy.armed.Store(true)
		got, err := s.Take(ctx, key)
		if proxy.cut.Load() != int32(i+1) {
			t.Fatalf("round %d: the proxy cut %d replies", i, proxy.cut.Load())
		}
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("round %d: Take after a lost reply = %q, %v; want the value", i, got, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("round %d: the key is still there: %v", i, err)
		}
		// Exactly one taker: another Take finds nothing.
		if _, err := s.Take(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("round %d: a second Take: %v, want ErrNotFound", i, err)
		}
	}
}

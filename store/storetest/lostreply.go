package storetest

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// replyCutter is a TCP proxy to a server that, once armed with a needle,
// drops the server's next reply on the connection whose client sent the
// needle, and cuts that connection: the command ran, and the client never
// hears of it.
type replyCutter struct {
	ln     net.Listener
	target string
	cut    atomic.Int32

	mu     sync.Mutex
	needle []byte
	marked *net.Conn // the client connection that sent the needle
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

// arm cuts the reply to the next request that carries needle.
func (p *replyCutter) arm(needle []byte) {
	p.mu.Lock()
	p.needle, p.marked = needle, nil
	p.mu.Unlock()
}

func (p *replyCutter) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				p.mu.Lock()
				if p.needle != nil && bytes.Contains(buf[:n], p.needle) {
					p.marked = &client
				}
				p.mu.Unlock()
				if _, werr := server.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		server.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hit := p.marked == &client
			if hit {
				p.needle, p.marked = nil, nil
			}
			p.mu.Unlock()
			if hit {
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

// testTakeLostReply cuts the connection right after the server ran a
// Take, before its reply reaches the client. The Take must still return
// the value, once: the key is gone, a second Take finds nothing, and
// Scan shows nothing of what the Take kept to be retried.
func testTakeLostReply(t *testing.T, b Backend) {
	u, err := url.Parse(b.URL)
	if err != nil || u.Host == "" {
		t.Fatal("Backend.URL has no host:port to put a proxy in front of")
	}
	_, ns, _ := b.Open(t)
	proxy := newReplyCutter(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	s := reopen(t, b, ns, u.String())
	ctx := t.Context()

	// Whatever a first use of Take loads (a script, a prepared
	// statement) is loaded before the reply that matters is cut.
	if _, err := s.Take(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Take of a missing key: %v", err)
	}
	for i := range 3 {
		key := "lost-reply-" + string(rune('a'+i))
		value := []byte("answer " + key)
		if err := s.Put(ctx, key, value, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		proxy.arm([]byte(key))
		got, err := s.Take(ctx, key)
		if n := proxy.cut.Load(); n != int32(i+1) {
			t.Fatalf("round %d: the proxy cut %d replies", i, n)
		}
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("round %d: Take after a lost reply = %q, %v; want the value", i, got, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("round %d: the key is still there: %v", i, err)
		}
		if got, err := s.Take(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("round %d: a second Take = %q, %v; want ErrNotFound", i, got, err)
		}
	}
	for cursor := ""; ; {
		entries, next, err := s.Scan(ctx, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if bytes.HasPrefix(e.Value, []byte("answer lost-reply-")) {
				t.Errorf("Scan returns %q under a key of %d bytes: a receipt is visible", e.Value, len(e.Key))
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
}

package faults

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy between the nodes and the store, for injecting
// faults: a partition (every connection cut, new ones held until it
// heals), added latency, dropped connections.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	down    bool
	healed  chan struct{} // closed when a partition heals
	latency time.Duration
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{}), healed: make(chan struct{})}
	close(p.healed)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.drop()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(c net.Conn) {
	p.mu.Lock()
	healed := p.healed
	p.mu.Unlock()
	<-healed // a partition holds new connections, as a lost SYN would
	s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				d := p.latency
				p.mu.Unlock()
				if d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	wg.Add(2)
	go pipe(s, c)
	go pipe(c, s)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// drop closes every connection through the proxy.
func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// partition cuts every connection and holds new ones for d.
func (p *proxy) partition(d time.Duration) {
	p.mu.Lock()
	p.down = true
	p.healed = make(chan struct{})
	healed := p.healed
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	time.Sleep(d) // the fault's duration: real time is the subject
	p.mu.Lock()
	p.down = false
	close(healed)
	p.mu.Unlock()
}

// slow adds latency to every chunk for d.
func (p *proxy) slow(latency, d time.Duration) {
	p.mu.Lock()
	p.latency = latency
	p.mu.Unlock()
	time.Sleep(d) // the fault's duration: real time is the subject
	p.mu.Lock()
	p.latency = 0
	p.mu.Unlock()
}

var _ = io.EOF

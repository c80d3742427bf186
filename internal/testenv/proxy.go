package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server until Cut, which closes the
// listener and every forwarded connection: the server vanishes from the
// client's point of view, as when its host goes down.
type Proxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cutOff   bool
	conns    []net.Conn
}

// StartProxy listens on a local port and forwards every connection to
// target (host:port). The proxy is cut when the test ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("start proxy: %v", err)
	}
	p := &Proxy{listener: l, target: target}
	go p.serve()
	tb.Cleanup(p.Cut)
	return p
}

// Addr returns the host:port clients connect to instead of the target.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Cut closes the listener and every forwarded connection. It may be
// called more than once.
func (p *Proxy) Cut() {
	_ = p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *Proxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

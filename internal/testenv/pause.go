package testenv

import (
	"net"
	"sync"
	"testing"
)

// PauseProxy forwards TCP connections to a server until Pause; then it
// keeps every connection open but forwards nothing either way, as a
// stalled server or a black-holed route does: the client's reads hang
// with no error. Resume forwards again, bytes held meanwhile included.
type PauseProxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	paused   bool
	resumed  *sync.Cond
	conns    []net.Conn
	wg       sync.WaitGroup
}

// StartPauseProxy listens on a loopback port in front of target
// (host:port), until the test ends.
func StartPauseProxy(tb testing.TB, target string) *PauseProxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pause proxy: %v", err)
	}
	p := &PauseProxy{listener: l, target: target}
	p.resumed = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.accept()
	}()
	tb.Cleanup(p.close)
	return p
}

// Addr returns the host:port clients connect to instead of the target.
func (p *PauseProxy) Addr() string { return p.listener.Addr().String() }

// Pause stops forwarding on every connection, current and new.
func (p *PauseProxy) Pause() { p.set(true) }

// Resume forwards again.
func (p *PauseProxy) Resume() { p.set(false) }

func (p *PauseProxy) set(paused bool) {
	p.mu.Lock()
	p.paused = paused
	p.mu.Unlock()
	p.resumed.Broadcast()
}

func (p *PauseProxy) close() {
	_ = p.listener.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.Resume() // wakes pumps waiting to forward, which then fail and end
	p.wg.Wait()
}

func (p *PauseProxy) accept() {
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
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.pump(server, client)
		}()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.pump(client, server)
		}()
	}
}

// pump copies src to dst, holding each chunk while paused.
func (p *PauseProxy) pump(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.paused {
				p.resumed.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

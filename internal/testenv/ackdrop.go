package testenv

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AckDropProxy is a TCP proxy that forwards both ways until it is armed;
// then the next client message containing its pattern is forwarded to the
// server, the server's answer is read and thrown away, and both
// connections are closed. The server did the work (a committed INSERT);
// the client never hears so: the lost acknowledgement of a real network.
type AckDropProxy struct {
	listener net.Listener
	target   string
	pattern  []byte
	armed    atomic.Bool
	stop     atomic.Bool
	dropped  atomic.Int64
	wg       sync.WaitGroup
}

// StartAckDropProxy listens on a loopback port in front of target, until
// the test ends.
func StartAckDropProxy(tb testing.TB, target string, pattern []byte) *AckDropProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("ack-drop proxy: %v", err)
	}
	p := &AckDropProxy{listener: ln, target: target, pattern: pattern}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.accept()
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *AckDropProxy) Addr() string { return p.listener.Addr().String() }

// Arm makes the proxy drop the answer to the next message carrying the
// pattern.
func (p *AckDropProxy) Arm() { p.armed.Store(true) }

// StopAfterDrop makes the proxy stop listening once it has dropped an
// answer, so that the client cannot reach the server afterwards either:
// a network that fails for good right after the commit.
func (p *AckDropProxy) StopAfterDrop() { p.stop.Store(true) }

// Dropped counts the answers dropped so far.
func (p *AckDropProxy) Dropped() int { return int(p.dropped.Load()) }

func (p *AckDropProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.pipe(client, server)
		}()
	}
}

// pipe forwards one connection pair; the client-to-server direction
// watches for the pattern.
func (p *AckDropProxy) pipe(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	var drop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && !drop.Load() {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if n > 0 && drop.Load() {
				// The answer reached the proxy: the server finished the
				// work. Nobody else hears of it.
				p.dropped.Add(1)
				if p.stop.Load() {
					_ = p.listener.Close()
				}
				_ = client.Close()
				_ = server.Close()
				return
			}
			if err != nil {
				_ = client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if p.armed.Load() && bytes.Contains(buf[:n], p.pattern) && p.armed.CompareAndSwap(true, false) {
				drop.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = server.Close()
	<-done
}

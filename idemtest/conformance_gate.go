package idemtest

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// burstGate lines up the duplicates of a burst on the server: each request
// sends its headers and all of its body but the last byte, and waits;
// opening the gate sends every last byte at once, so the server's handlers,
// all blocked reading the body, resume within microseconds of each other.
// Without it a burst's requests arrive spread over a dial and a write each,
// and a check-then-insert race with an instant handler is rarely hit.
type burstGate struct {
	open   chan struct{}
	wrote  chan struct{}
	opened atomic.Int64 // UnixNano when open was closed
}

func newBurstGate(n int) *burstGate {
	return &burstGate{open: make(chan struct{}), wrote: make(chan struct{}, n)}
}

// trace reports each request whose headers are on the wire.
func (g *burstGate) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { g.wrote <- struct{}{} },
	})
}

// reader yields body but holds its last byte until the gate opens.
func (g *burstGate) reader(body []byte) io.Reader {
	if len(body) == 0 {
		return &gatedReader{gate: g}
	}
	return &gatedReader{head: body[:len(body)-1], tail: body[len(body)-1:], gate: g}
}

// gateWait bounds how long a burst waits for its requests' headers before
// it opens anyway (a proxy that buffers whole requests never reports them).
const gateWait = 2 * time.Second

// gateSettle lets the server reach its body read after the last headers.
const gateSettle = 5 * time.Millisecond

// release waits until n requests wrote their headers (or gateWait), then
// opens the gate.
func (g *burstGate) release(ctx context.Context, n int) {
	timeout := time.NewTimer(gateWait)
	defer timeout.Stop()
	for range n {
		select {
		case <-g.wrote:
		case <-timeout.C:
			g.openNow()
			return
		case <-ctx.Done():
			g.openNow()
			return
		}
	}
	time.Sleep(gateSettle)
	g.openNow()
}

func (g *burstGate) openNow() {
	g.opened.Store(time.Now().UnixNano())
	close(g.open)
}

// openedAt is when the gate opened: the start of every gated exchange.
func (g *burstGate) openedAt() time.Time { return time.Unix(0, g.opened.Load()) }

type gatedReader struct {
	head, tail []byte
	gate       *burstGate
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	<-r.gate.open
	if len(r.tail) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.tail)
	r.tail = r.tail[n:]
	return n, nil
}

package server

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
)

// captureWriter buffers a handler's whole response (status, headers,
// body) so the idempotency layer can decide whether to store it before any
// byte reaches the client.
type captureWriter struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

// capturePool recycles capture writers, with their header map and body
// buffer, across the requests of one idempotency layer. The zero value is
// ready to use.
type capturePool struct{ pool sync.Pool }

// maxPooledCaptureBody is the largest body buffer kept for reuse, so one
// large answer does not pin its memory in the pool.
const maxPooledCaptureBody = 64 << 10

// get returns an empty capture writer.
func (p *capturePool) get() *captureWriter {
	if c, ok := p.pool.Get().(*captureWriter); ok {
		return c
	}
	return &captureWriter{header: make(http.Header)}
}

// put empties c and keeps it for a later request. The caller must be
// done with c: its body was written out, and its header values, which
// may now belong to the real response, are never written again, only
// dropped from the map.
func (p *capturePool) put(c *captureWriter) {
	if c.body.Cap() > maxPooledCaptureBody {
		return
	}
	clear(c.header)
	c.status = 0
	c.wroteHeader = false
	c.body.Reset()
	p.pool.Put(c)
}

// Header implements http.ResponseWriter.
func (c *captureWriter) Header() http.Header { return c.header }

// WriteHeader implements http.ResponseWriter. The first final status wins,
// as with net/http; informational statuses (1xx) are dropped because the
// response is sent only once the handler has returned. An impossible status
// panics, as net/http does, so the layer answers 500 instead of storing it.
func (c *captureWriter) WriteHeader(status int) {
	if status < 100 || status > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", status))
	}
	if c.wroteHeader || (status >= 100 && status < 200) {
		return
	}
	c.status = status
	c.wroteHeader = true
}

// Write implements http.ResponseWriter.
func (c *captureWriter) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	return c.body.Write(p)
}

// Flush implements http.Flusher as a no-op: nothing is sent before the
// handler returns, but handlers that flush keep working.
func (c *captureWriter) Flush() {}

// finish settles what net/http would have settled on the wire: the
// implicit 200 and a sniffed Content-Type, so the first answer and its
// replays carry the same headers.
func (c *captureWriter) finish() {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	if _, set := c.header["Content-Type"]; !set && c.body.Len() > 0 {
		c.header.Set("Content-Type", http.DetectContentType(c.body.Bytes()))
	}
}

// reset drops everything captured so far.
func (c *captureWriter) reset() {
	c.header = make(http.Header)
	c.status = 0
	c.wroteHeader = false
	c.body.Reset()
}

package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
)

// ErrWriteAfterReturn is what a write into the handler's ResponseWriter
// returns once the handler chain below the layer has returned: the
// answer was already settled and sent, so the write is dropped (and
// logged). Write the answer inside the handler (see the package doc for
// each framework).
var ErrWriteAfterReturn = errors.New("server: write after the handler returned was dropped; write the answer inside the handler")

// captureWriter buffers a handler's whole response (status, headers,
// body) so the idempotency layer can decide whether to store it before any
// byte reaches the client.
//
// A captureWriter is made for one request and never reused: code that
// keeps the writer past the handler's return (echo's error handler under
// WrapMiddleware writes into it after the chain returned) must not reach
// another request. Once closed, every write is dropped and reported to
// onLate. Only the body buffer, which user code never sees, is pooled.
type captureWriter struct {
	mu          sync.Mutex
	header      http.Header
	status      int
	wroteHeader bool
	body        *bytes.Buffer
	closed      bool
	lateSeen    bool
	lateLog     *slog.Logger // told once, of the first write after close
}

// captureBodies recycles the body buffers of capture writers.
var captureBodies sync.Pool

// maxPooledCaptureBody is the largest body buffer kept for reuse, so one
// large answer does not pin its memory in the pool.
const maxPooledCaptureBody = 64 << 10

// newCaptureWriter returns an empty capture writer for one request;
// lateLog, if not nil, is told of the first write after close.
func newCaptureWriter(lateLog *slog.Logger) *captureWriter {
	c := new(captureWriter)
	c.init(lateLog)
	return c
}

// init makes c an empty capture writer, as newCaptureWriter does, for a
// writer allocated with the rest of its request (heldRequest).
func (c *captureWriter) init(lateLog *slog.Logger) {
	body, ok := captureBodies.Get().(*bytes.Buffer)
	if !ok {
		body = new(bytes.Buffer)
	}
	c.header = make(http.Header)
	c.body = body
	c.lateLog = lateLog
}

// Header implements http.ResponseWriter. Once the writer is closed it
// returns a map of its own each time, so headers set late change nothing.
func (c *captureWriter) Header() http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return make(http.Header)
	}
	return c.header
}

// WriteHeader implements http.ResponseWriter. The first final status wins,
// as with net/http; informational statuses (1xx) are dropped because the
// response is sent only once the handler has returned. An impossible status
// panics, as net/http does, so the layer answers 500 instead of storing it.
func (c *captureWriter) WriteHeader(status int) {
	if status < 100 || status > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", status))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.late() {
		return
	}
	c.writeHeaderLocked(status)
}

func (c *captureWriter) writeHeaderLocked(status int) {
	if c.wroteHeader || (status >= 100 && status < 200) {
		return
	}
	c.status = status
	c.wroteHeader = true
}

// Write implements http.ResponseWriter. After close it writes nothing and
// returns ErrWriteAfterReturn.
func (c *captureWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.late() {
		return 0, ErrWriteAfterReturn
	}
	c.writeHeaderLocked(http.StatusOK)
	return c.body.Write(p)
}

// late reports whether the writer is closed, telling onLate the first
// time. The caller holds c.mu.
func (c *captureWriter) late() bool {
	if !c.closed {
		return false
	}
	if !c.lateSeen {
		c.lateSeen = true
		if c.lateLog != nil {
			c.lateLog.Warn("dropped a write made after the handler returned; write the answer inside the handler")
		}
	}
	return true
}

// Flush implements http.Flusher as a no-op: nothing is sent before the
// handler returns, but handlers that flush keep working.
func (c *captureWriter) Flush() {}

// close ends the handler's part: later writes are dropped. It reports
// whether the handler wrote anything (a status or a body).
func (c *captureWriter) close() (wrote bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.wroteHeader
}

// finish settles what net/http would have settled on the wire: a sniffed
// Content-Type, so the first answer and its replays carry the same
// headers. It follows close.
func (c *captureWriter) finish() {
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

// recycle hands the body buffer back to the pool once the response was
// written out and stored. It follows close, so no write can reach the
// buffer any more.
func (c *captureWriter) recycle() {
	body := c.body
	c.body = nil
	if body == nil || body.Cap() > maxPooledCaptureBody {
		return
	}
	body.Reset()
	captureBodies.Put(body)
}

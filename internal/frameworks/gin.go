package frameworks

import (
	"bufio"
	"errors"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/idemkit/idem/server"
)

// Gin is the payments handler in gin's idiom: a refusal is recorded with
// c.Error and the handler aborts; the middleware that renders errors
// writes it.
func (p *Payments) Gin(c *gin.Context) {
	a, err := p.Charge(c.Request)
	if err != nil {
		_ = c.Error(err)
		c.Abort()
		return
	}
	c.Data(a.Status, "application/json", a.Body)
}

// GinLayer is the idempotency layer as a native gin middleware: the rest
// of the chain runs inside the layer on a gin.ResponseWriter over the
// layer's writer, and errors recorded with c.Error are written there,
// inside the layer, so the layer captures and judges the answer the
// client gets.
func GinLayer(layer *server.Middleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		req, outer := c.Request, c.Writer
		layer.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.Request = r
			c.Writer = &ginWriter{ResponseWriter: w, status: http.StatusOK}
			c.Next()
			writeGinErrors(c)
		})).ServeHTTP(outer, req)
		c.Request, c.Writer = req, outer
		c.Abort()
	}
}

// writeGinErrors writes the last error a handler recorded, unless it has
// answered already.
func writeGinErrors(c *gin.Context) {
	last := c.Errors.Last()
	if last == nil || c.Writer.Written() {
		return
	}
	var refusal *Answer
	if errors.As(last.Err, &refusal) {
		c.Data(refusal.Status, "application/json", refusal.Body)
		return
	}
	c.Data(http.StatusInternalServerError, "application/json", []byte(`{"error":"internal"}`))
}

// ginWriter is a gin.ResponseWriter over the layer's writer. Like gin's
// own, it holds the status until the first byte, so headers a renderer
// sets after WriteHeader still go out.
type ginWriter struct {
	http.ResponseWriter
	status  int
	size    int
	written bool
}

func (w *ginWriter) WriteHeader(code int) {
	if code > 0 && !w.written {
		w.status = code
	}
}

func (w *ginWriter) WriteHeaderNow() {
	if !w.written {
		w.written = true
		w.ResponseWriter.WriteHeader(w.status)
	}
}

func (w *ginWriter) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

func (w *ginWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }
func (w *ginWriter) Status() int                       { return w.status }
func (w *ginWriter) Written() bool                     { return w.written }
func (w *ginWriter) Pusher() http.Pusher               { return nil }

func (w *ginWriter) Size() int {
	if !w.written {
		return -1
	}
	return w.size
}

// Flush sends the header; the layer's writer holds the body until the
// handler returns anyway.
func (w *ginWriter) Flush() { w.WriteHeaderNow() }

// Hijack is refused: a guarded answer is captured whole.
func (w *ginWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("a response under the idempotency layer cannot be hijacked")
}

// CloseNotify is gin's deprecated close notification; nothing is sent.
func (w *ginWriter) CloseNotify() <-chan bool { return make(chan bool) }

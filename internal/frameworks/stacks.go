package frameworks

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/labstack/echo/v4"

	"github.com/idemkit/idem/server"
)

// Frameworks a stack mounts the layer in.
const (
	Mux        = "mux"         // http.ServeMux, layer.Handler(mux)
	Chi        = "chi"         // chi, r.Use(layer.Handler)
	EchoWrap   = "echo-wrap"   // echo, e.Use(echo.WrapMiddleware(layer.Handler))
	EchoNative = "echo-native" // echo, e.Use(EchoLayer(layer))
	GinWrap    = "gin-wraph"   // gin, g.POST(route, gin.WrapH(layer.Wrap(route, h)))
	GinNative  = "gin-native"  // gin, g.Use(GinLayer(layer))
)

// AllFrameworks lists every framework.
var AllFrameworks = []string{Mux, Chi, EchoWrap, EchoNative, GinWrap, GinNative}

// Placements of compression and http.TimeoutHandler around the layer.
// Outer wraps the whole server handler; inner sits between the layer and
// a net/http payments handler (mounted with the framework's adapter,
// echo.WrapHandler or gin.WrapH), since http.TimeoutHandler runs its
// handler on another goroutine, where an echo or gin context must not go.
const (
	Bare         = "bare"
	GzipOuter    = "gzip-outer"
	GzipInner    = "gzip-inner"
	TimeoutOuter = "timeout-outer"
	TimeoutInner = "timeout-inner"
)

// AllPlacements lists every placement the layer supports. TimeoutInner
// is left out: http.TimeoutHandler below the layer answers 503 and
// abandons a handler that goes on running, whose answer the layer never
// sees; the layer then keeps the key reserved until its lease ends (no
// second run beside the first), but a handler whose effect does not
// commit with its key's completion (Held, pgstore.CompleteTx) and outlives
// the lease runs again on the retry after it. The docs say to put the
// timeout above the layer (PROTOCOL Choice 50), and package server's
// tests hold the layer to the kept reservation.
var AllPlacements = []string{Bare, GzipOuter, GzipInner, TimeoutOuter}

// LateErrors reports whether framework writes a handler's returned error
// after the layer has returned, where the layer cannot capture it: echo's
// HTTPErrorHandler under echo.WrapMiddleware.
func LateErrors(framework string) bool { return framework == EchoWrap }

// LayerOptions are the layer's options for a stack: the tenant is the
// principal, the store timeout a third of the lease (the least a lease
// may outlast), and with compression inside the layer the stored answer
// keeps its Content-Encoding and Vary, or a replay would be compressed
// bytes without the header that says so.
func LayerOptions(placement string, lease time.Duration) []server.Option {
	opts := []server.Option{server.WithPrincipal(TenantPrincipal), server.WithLease(lease),
		server.WithStoreTimeout(lease / server.LeaseStoreTimeouts)}
	if placement == GzipInner {
		opts = append(opts, server.WithStoredHeaders("Content-Encoding", "Vary"))
	}
	return opts
}

// Stack is one cell of the matrix: a framework, a placement, a layer and
// the payments handler.
type Stack struct {
	Framework string
	Placement string
	Layer     *server.Middleware
	Payments  *Payments
	Timeout   time.Duration // of http.TimeoutHandler
}

// TimeoutBody is what http.TimeoutHandler answers.
const TimeoutBody = `{"error":"timeout"}`

// Handler builds the stack's server handler.
func (s Stack) Handler() (http.Handler, error) {
	identity := func(h http.Handler) http.Handler { return h }
	outer, inner := identity, identity
	var wrap func(http.Handler) http.Handler
	switch s.Placement {
	case Bare:
	case GzipOuter, GzipInner:
		wrap = middleware.Compress(5, "application/json")
	case TimeoutOuter, TimeoutInner:
		wrap = func(h http.Handler) http.Handler { return http.TimeoutHandler(h, s.Timeout, TimeoutBody) }
	default:
		return nil, fmt.Errorf("frameworks: unknown placement %q; want one of %v", s.Placement, AllPlacements)
	}
	innerPlaced := s.Placement == GzipInner || s.Placement == TimeoutInner
	switch {
	case innerPlaced:
		inner = wrap
	case wrap != nil:
		outer = wrap
	}
	pay := inner(s.Payments.HTTP())
	switch s.Framework {
	case Mux:
		mux := http.NewServeMux()
		mux.Handle("POST "+Route, pay)
		return outer(s.Layer.Handler(mux)), nil
	case Chi:
		r := chi.NewRouter()
		r.Use(s.Layer.Handler)
		r.Method(http.MethodPost, Route, pay)
		return outer(r), nil
	case EchoWrap, EchoNative:
		e := echo.New()
		e.Logger.SetOutput(io.Discard)
		if s.Framework == EchoWrap {
			e.Use(echo.WrapMiddleware(s.Layer.Handler))
		} else {
			e.Use(EchoLayer(s.Layer))
		}
		if innerPlaced {
			e.POST(Route, echo.WrapHandler(pay))
		} else {
			e.POST(Route, s.Payments.Echo)
		}
		return outer(e), nil
	case GinWrap, GinNative:
		gin.SetMode(gin.ReleaseMode)
		g := gin.New()
		switch {
		case s.Framework == GinWrap:
			g.POST(Route, gin.WrapH(s.Layer.Wrap(Route, pay)))
		case innerPlaced:
			g.Use(GinLayer(s.Layer))
			g.POST(Route, gin.WrapH(pay))
		default:
			g.Use(GinLayer(s.Layer))
			g.POST(Route, s.Payments.Gin)
		}
		return outer(g), nil
	}
	return nil, fmt.Errorf("frameworks: unknown framework %q; want one of %v", s.Framework, AllFrameworks)
}

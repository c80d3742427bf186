package idem

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// front is a real HTTP server in front of an origin, as a CDN, a gateway
// or an expired-credentials check would be: a request the script answers
// never reaches the origin; every other one is proxied to it.
type front struct {
	*httptest.Server
	requests atomic.Int64
}

// frontScript answers request number n (1-based) itself and returns true,
// or returns false to let it through to the origin. forward sends a
// request to the origin, for a script that answers after the origin did.
type frontScript func(n int, w http.ResponseWriter, r *http.Request, forward http.Handler) bool

func newFront(t *testing.T, origin string, script frontScript) *front {
	t.Helper()
	u, err := url.Parse(origin)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		// The origin dropped the connection: so does the front, and
		// the client sees a lost answer.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	f := &front{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.requests.Add(1))
		if script != nil && script(n, w, r, proxy) {
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// answer is a frontScript step that writes status, header and body.
func answer(w http.ResponseWriter, status int, header map[string]string, body string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

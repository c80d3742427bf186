package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// firstRefusalServer is a scripted storm server whose capacity is counted,
// not timed: it sheds the first request of every caller numbered from
// served on with a 503 at once and accepts everything else. The herd's
// first wave is thus shed by the same number of rejections however slow
// the machine, where a ShedServer's timed slots shed more, or fewer, as
// load stretches its service time.
type firstRefusalServer struct {
	served int
	mu     sync.Mutex
	seen   map[int]bool
}

// newFirstRefusalServer starts a firstRefusalServer on a loopback
// listener and returns its URL.
func newFirstRefusalServer(t *testing.T, served int) string {
	t.Helper()
	srv := httptest.NewServer(&firstRefusalServer{served: served, seen: map[int]bool{}})
	t.Cleanup(srv.Close)
	return srv.URL
}

func (s *firstRefusalServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	caller, err := strconv.Atoi(r.URL.Query().Get("caller"))
	if r.URL.Path != ShedPath || err != nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	first := !s.seen[caller]
	s.seen[caller] = true
	s.mu.Unlock()
	if first && caller >= s.served {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"type":"https://idem.dev/problems/unavailable","title":"Service unavailable","status":503}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":"pay_1","status":"succeeded"}`)
}

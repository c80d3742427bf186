package bench

import (
	"io"
	"net/http"
	"strconv"
	"time"
)

// ShedServer is the server of the storm: it serves Slots requests at a
// time, each for Service, and sheds every request that finds no free
// slot with a 503 at once, as a load shedder in front of a service does.
// Its /down route answers 503 to everything: a total outage.
type ShedServer struct {
	slots      chan struct{}
	service    time.Duration
	retryAfter int // seconds; 0 sends no Retry-After
}

// NewShedServer returns a server of slots slots (at least 1) holding each
// for service; retryAfter > 0 adds a Retry-After of that many seconds to
// every 503.
func NewShedServer(slots int, service time.Duration, retryAfter int) *ShedServer {
	return &ShedServer{slots: make(chan struct{}, max(slots, 1)), service: service, retryAfter: retryAfter}
}

// Paths of the ShedServer's routes.
const (
	ShedPath = "/shed"
	DownPath = "/down"
)

// ServeHTTP serves ShedPath and DownPath; anything else is 404.
func (s *ShedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	switch r.URL.Path {
	case ShedPath:
	case DownPath:
		s.reject(w)
		return
	default:
		http.NotFound(w, r)
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.reject(w)
		return
	}
	defer func() { <-s.slots }()
	select {
	case <-time.After(s.service):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":"pay_1","status":"succeeded"}`)
}

func (s *ShedServer) reject(w http.ResponseWriter) {
	if s.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"type":"https://idem.dev/problems/unavailable","title":"Service unavailable","status":503}`)
}

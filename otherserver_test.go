package idem

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// otherLibrary is an idempotency server written apart from this project's
// reference server, in the way a correct third-party middleware answers:
// a duplicate of a request still executing gets 409 with Retry-After and
// an RFC 9457 problem of type about:blank (or, with stripeStyle, Stripe's
// plain-JSON idempotency_error); a finished one is replayed; a reused key
// with another body gets 422 about:blank. Its handler takes effect before
// it answers, and keeps executing when the client goes away.
type otherLibrary struct {
	*httptest.Server
	effectTime  time.Duration
	stripeStyle bool

	mu       sync.Mutex
	keys     map[string]*otherEntry
	payments int
}

type otherEntry struct {
	body   string
	done   bool
	status int
	answer string
}

func newOtherLibrary(t *testing.T, effectTime time.Duration, stripeStyle bool) *otherLibrary {
	t.Helper()
	s := &otherLibrary{effectTime: effectTime, stripeStyle: stripeStyle, keys: map[string]*otherEntry{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *otherLibrary) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	e := s.keys[key]
	switch {
	case e != nil && e.body != string(body):
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"type":"about:blank","title":"Unprocessable Content","status":422}`)
		return
	case e != nil && !e.done:
		s.mu.Unlock()
		s.inProgress(w)
		return
	case e != nil:
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, e.answer)
		return
	}
	e = &otherEntry{body: string(body)}
	s.keys[key] = e
	s.mu.Unlock()

	time.Sleep(s.effectTime) // the effect, which runs to its end
	s.mu.Lock()
	s.payments++
	e.done, e.status, e.answer = true, http.StatusCreated, fmt.Sprintf(`{"id":"pay_%d"}`, s.payments)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = io.WriteString(w, e.answer)
}

func (s *otherLibrary) inProgress(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	if s.stripeStyle {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Idempotent Key."}}`)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusConflict)
	_, _ = io.WriteString(w, `{"type":"about:blank","title":"Conflict","status":409,"detail":"a request with this key is in progress"}`)
}

// paymentCount is how many effects the server made.
func (s *otherLibrary) paymentCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.payments
}

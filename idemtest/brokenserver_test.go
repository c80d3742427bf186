package idemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server"
)

// flaw is the one way a brokenServer departs from the protocol.
type flaw int

const (
	// flawNone: a correct, minimal server; the control of the table.
	flawNone flaw = iota
	// flawNoIdempotency: the key is ignored, every POST makes a payment.
	flawNoIdempotency
	// flawCheckThenInsert: looks the key up, then inserts it later without
	// an atomic create-if-absent, so concurrent duplicates all get in.
	flawCheckThenInsert
	// flawNoFingerprint: a different body under a used key is replayed
	// instead of refused.
	flawNoFingerprint
	// flawGlobalKeys: keys are not scoped by principal.
	flawGlobalKeys
	// flawRawQuotedKey: the quotes of a Structured Field String are taken
	// as part of the key.
	flawRawQuotedKey
	// flawNoRetryAfter: 409 in-progress without Retry-After.
	flawNoRetryAfter
	// flawSloppyProblems: error documents as application/json, no title.
	flawSloppyProblems
)

// checkThenInsertWindow is the pause between the look-up and the insert of
// flawCheckThenInsert: it makes the race real for concurrent duplicates.
const checkThenInsertWindow = 200 * time.Millisecond

// slowHeaderName is the header that makes a brokenServer hold a request for
// slowHeaderDelay after reserving its key, as a server-specific test hook.
const (
	slowHeaderName  = "X-Conformance-Slow"
	slowHeaderDelay = 150 * time.Millisecond
)

// brokenServer is a small payments server with one deliberate protocol
// flaw, for proving that the conformance checks notice it.
type brokenServer struct {
	flaw     flaw
	delay    atomic.Int64 // handler delay in nanoseconds, set through hold
	payments atomic.Int64

	mu      sync.Mutex
	records map[string]brokenRecord
}

type brokenRecord struct {
	fingerprint string
	done        bool
	status      int
	body        []byte
}

func newBrokenServer(f flaw) *brokenServer {
	return &brokenServer{flaw: f, records: map[string]brokenRecord{}}
}

// hold slows every guarded request until the returned function is called.
func (s *brokenServer) hold(context.Context) (func(), error) {
	s.delay.Store(int64(150 * time.Millisecond))
	return func() { s.delay.Store(0) }, nil
}

func (s *brokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/payments" {
		s.problem(w, http.StatusNotFound, testserver.ProblemNotFound, 0)
		return
	}
	principal, err := server.BearerPrincipal([]byte("broken server key"))(r)
	if err != nil {
		s.problem(w, http.StatusUnauthorized, testserver.ProblemUnauthorized, 0)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.problem(w, http.StatusBadRequest, testserver.ProblemInvalidRequest, 0)
		return
	}
	if s.flaw == flawNoIdempotency {
		status, resp := s.createPayment()
		s.answer(w, status, resp, false)
		return
	}
	key, ok := s.key(w, r)
	if !ok {
		return
	}
	scope := principal + "\n" + key
	if s.flaw == flawGlobalKeys {
		scope = key
	}
	fingerprint := testserver.Fingerprint(r.Method, r.URL.RequestURI(), body)
	if s.flaw == flawNoFingerprint {
		fingerprint = ""
	}
	if rec, reserved := s.reserve(scope, fingerprint); !reserved {
		s.answerExisting(w, rec, fingerprint)
		return
	}
	if r.Header.Get(slowHeaderName) != "" {
		time.Sleep(slowHeaderDelay)
	}
	time.Sleep(time.Duration(s.delay.Load()))
	status, resp := s.createPayment()
	s.mu.Lock()
	s.records[scope] = brokenRecord{fingerprint: fingerprint, done: true, status: status, body: resp}
	s.mu.Unlock()
	s.answer(w, status, resp, false)
}

// key parses the Idempotency-Key header, answering 400 when it is missing
// or malformed.
func (s *brokenServer) key(w http.ResponseWriter, r *http.Request) (string, bool) {
	values := r.Header.Values("Idempotency-Key")
	if s.flaw == flawRawQuotedKey && len(values) == 1 && strings.HasPrefix(values[0], `"`) {
		return values[0], true
	}
	key, err := testserver.ParseKey(values)
	switch {
	case errors.Is(err, testserver.ErrMissingKey):
		s.problem(w, http.StatusBadRequest, testserver.ProblemMissingKey, 0)
		return "", false
	case err != nil:
		s.problem(w, http.StatusBadRequest, testserver.ProblemInvalidKey, 0)
		return "", false
	}
	return key, true
}

// reserve takes the key for this request, or returns the record that
// holds it. Only flawCheckThenInsert splits the look-up from the insert.
func (s *brokenServer) reserve(scope, fingerprint string) (brokenRecord, bool) {
	if s.flaw == flawCheckThenInsert {
		s.mu.Lock()
		rec, found := s.records[scope]
		s.mu.Unlock()
		if found {
			return rec, false
		}
		time.Sleep(checkThenInsertWindow)
		s.mu.Lock()
		s.records[scope] = brokenRecord{fingerprint: fingerprint}
		s.mu.Unlock()
		return brokenRecord{}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, found := s.records[scope]; found {
		return rec, false
	}
	s.records[scope] = brokenRecord{fingerprint: fingerprint}
	return brokenRecord{}, true
}

func (s *brokenServer) answerExisting(w http.ResponseWriter, rec brokenRecord, fingerprint string) {
	switch {
	case rec.fingerprint != fingerprint:
		s.problem(w, http.StatusUnprocessableEntity, testserver.ProblemKeyReused, 0)
	case !rec.done && s.flaw == flawNoRetryAfter:
		s.problem(w, http.StatusConflict, testserver.ProblemInProgress, 0)
	case !rec.done:
		s.problem(w, http.StatusConflict, testserver.ProblemInProgress, time.Second)
	default:
		s.answer(w, rec.status, rec.body, true)
	}
}

func (s *brokenServer) createPayment() (int, []byte) {
	n := s.payments.Add(1)
	return http.StatusCreated, fmt.Appendf(nil, `{"id":"pay_%d","status":"succeeded"}`, n)
}

func (s *brokenServer) answer(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *brokenServer) problem(w http.ResponseWriter, status int, suffix string, retryAfter time.Duration) {
	if s.flaw == flawSloppyProblems {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"type":%q,"status":%d}`, testserver.ProblemTypePrefix+suffix, status)
		return
	}
	testserver.WriteProblem(w, status, suffix, http.StatusText(status), "", retryAfter)
}

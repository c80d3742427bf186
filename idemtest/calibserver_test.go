package idemtest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// defect is the one known defect class of a calibration server.
type defect int

const (
	// defectNone: correct, and speaks this project's full profile.
	defectNone defect = iota
	// defectNoFingerprint: a different body under a used key is replayed.
	defectNoFingerprint
	// defectGlobalKeys: keys are not scoped by principal.
	defectGlobalKeys
	// defectLengthOnly: the key validator checks only its length (of the
	// first header line).
	defectLengthOnly
	// defectLockWait: a duplicate waits for its original, then gets its
	// answer; never 409.
	defectLockWait
	// defectCaches4xx: a validation error is stored under the key, which
	// is burned for the corrected request.
	defectCaches4xx
	// defectCheckThenInsert: the key is looked up and inserted in two
	// steps around an instant handler.
	defectCheckThenInsert
	// defectAboutBlank: correct statuses, problems of type about:blank.
	defectAboutBlank
	// defectOtherReplayHeader: replays marked Idempotency-Replayed.
	defectOtherReplayHeader
	// defectUUIDOnly: only a bare UUID is accepted as a key.
	defectUUIDOnly
	// defectTargetOutsideFingerprint: the fingerprint is the body alone,
	// so a used key sent with another query gets the first answer.
	defectTargetOutsideFingerprint
)

// calibrationServer is a minimal payments API (POST and GET /v1/payments)
// with one known defect, written independently of the reference server so
// that the checker is calibrated against an implementation it did not
// grow up with.
type calibrationServer struct {
	defect defect
	delay  atomic.Int64 // handler delay in nanoseconds, set through hold
	ids    atomic.Int64

	mu       sync.Mutex
	records  map[string]*calRecord
	payments map[string][]string // principal → payment ids
}

type calRecord struct {
	fingerprint string
	done        chan struct{} // closed when status and body are final
	status      int
	body        []byte
}

func newCalibrationServer(d defect) *calibrationServer {
	return &calibrationServer{defect: d, records: map[string]*calRecord{}, payments: map[string][]string{}}
}

// hold slows every payment until the returned function is called.
func (s *calibrationServer) hold(context.Context) (func(), error) {
	s.delay.Store(int64(150 * time.Millisecond))
	return func() { s.delay.Store(0) }, nil
}

func (s *calibrationServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal := r.Header.Get("Authorization")
	switch {
	case r.URL.Path != "/v1/payments":
		s.problem(w, http.StatusNotFound, "not-found")
	case r.Method == http.MethodGet:
		s.list(w, principal)
	case r.Method == http.MethodPost:
		s.create(w, r, principal)
	default:
		s.problem(w, http.StatusMethodNotAllowed, "method-not-allowed")
	}
}

func (s *calibrationServer) list(w http.ResponseWriter, principal string) {
	s.mu.Lock()
	ids := append([]string{}, s.payments[principal]...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": ids, "total": len(ids)})
}

func (s *calibrationServer) create(w http.ResponseWriter, r *http.Request, principal string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.problem(w, http.StatusBadRequest, "invalid-request")
		return
	}
	key, ok := s.key(w, r)
	if !ok {
		return
	}
	valid := validPayment(body)
	if !valid && s.defect != defectCaches4xx {
		s.problem(w, http.StatusBadRequest, "invalid-request")
		return
	}
	scope := principal + "\n" + key
	if s.defect == defectGlobalKeys {
		scope = key
	}
	target := r.URL.RequestURI()
	if s.defect == defectTargetOutsideFingerprint {
		target = ""
	}
	sum := sha256.Sum256(append([]byte(target+"\n"), body...))
	fingerprint := string(sum[:])
	if s.defect == defectNoFingerprint {
		fingerprint = ""
	}
	rec, fresh := s.reserve(scope, fingerprint)
	if !fresh {
		s.existing(w, rec, fingerprint)
		return
	}
	if !valid { // defectCaches4xx: the refusal becomes the key's answer
		s.finish(rec, http.StatusBadRequest, s.problemBody(http.StatusBadRequest, "invalid-request"))
		s.existing(w, rec, fingerprint)
		return
	}
	time.Sleep(time.Duration(s.delay.Load()))
	id := fmt.Sprintf("pay_%d", s.ids.Add(1))
	s.mu.Lock()
	s.payments[principal] = append(s.payments[principal], id)
	s.mu.Unlock()
	resp := fmt.Appendf(nil, `{"id":%q,"status":"succeeded"}`, id)
	s.finish(rec, http.StatusCreated, resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(resp)
}

// validPayment: a JSON object with a positive amount.
func validPayment(body []byte) bool {
	var p struct {
		Amount int `json:"amount"`
	}
	return json.Unmarshal(body, &p) == nil && p.Amount > 0
}

// storeRoundTrip is what one call to the key store costs (a network hop
// to Redis or SQL); the handler itself is instant.
const storeRoundTrip = 100 * time.Microsecond

// reserve takes the scope for this request, or returns the record that
// holds it. defectCheckThenInsert looks up and inserts in two store
// calls; the others in one atomic create-if-absent.
func (s *calibrationServer) reserve(scope, fingerprint string) (*calRecord, bool) {
	fresh := &calRecord{fingerprint: fingerprint, done: make(chan struct{})}
	time.Sleep(storeRoundTrip)
	if s.defect == defectCheckThenInsert {
		s.mu.Lock()
		rec, found := s.records[scope]
		s.mu.Unlock()
		if found {
			return rec, false
		}
		time.Sleep(storeRoundTrip)
		s.mu.Lock()
		s.records[scope] = fresh
		s.mu.Unlock()
		return fresh, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, found := s.records[scope]; found {
		return rec, false
	}
	s.records[scope] = fresh
	return fresh, true
}

func (s *calibrationServer) finish(rec *calRecord, status int, body []byte) {
	s.mu.Lock()
	rec.status, rec.body = status, body
	s.mu.Unlock()
	close(rec.done)
}

// existing answers a request whose key is already taken.
func (s *calibrationServer) existing(w http.ResponseWriter, rec *calRecord, fingerprint string) {
	if rec.fingerprint != fingerprint {
		s.problem(w, http.StatusUnprocessableEntity, "key-reused")
		return
	}
	if s.defect == defectLockWait {
		<-rec.done
	}
	select {
	case <-rec.done:
	default:
		w.Header().Set("Retry-After", "1")
		s.problem(w, http.StatusConflict, "in-progress")
		return
	}
	s.mu.Lock()
	status, body := rec.status, rec.body
	s.mu.Unlock()
	marker := "Idempotent-Replayed"
	if s.defect == defectOtherReplayHeader {
		marker = "Idempotency-Replayed"
	}
	w.Header().Set(marker, "true")
	if status >= 400 {
		w.Header().Set("Content-Type", "application/problem+json")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// key reads Idempotency-Key by the server's rules, answering 400 when it
// is missing or refused.
func (s *calibrationServer) key(w http.ResponseWriter, r *http.Request) (string, bool) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		s.problem(w, http.StatusBadRequest, "missing-key")
		return "", false
	}
	var key string
	var ok bool
	switch s.defect {
	case defectLengthOnly:
		key = r.Header.Get("Idempotency-Key")
		ok = key != "" && len(key) <= 255
	case defectUUIDOnly:
		key = values[0]
		ok = len(values) == 1 && uuidPattern.MatchString(key)
	default:
		key, ok = draftKey(values)
	}
	if !ok {
		s.problem(w, http.StatusBadRequest, "invalid-key")
		return "", false
	}
	return key, true
}

// draftKey reads one header line, bare or as a Structured Field String
// without escapes, of 1–255 visible ASCII characters.
func draftKey(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	k := strings.Trim(values[0], " \t")
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if k == "" || len(k) > 255 {
		return "", false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e || k[i] == '"' || k[i] == '\\' {
			return "", false
		}
	}
	return k, true
}

func (s *calibrationServer) problemBody(status int, suffix string) []byte {
	typ := "https://calibration.example/problems/" + suffix
	if s.defect == defectAboutBlank {
		typ = "about:blank"
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "title": http.StatusText(status), "status": status})
	return b
}

func (s *calibrationServer) problem(w http.ResponseWriter, status int, suffix string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(s.problemBody(status, suffix))
}

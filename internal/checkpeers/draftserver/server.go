// Package draftserver is a payments API written from the text of
// draft-ietf-httpapi-idempotency-key-header-07 alone, without idem's
// server package: each MUST and SHOULD of the draft that binds a
// resource is quoted beside the code that does it. `idem check` grades it
// at the draft level.
//
// POST /v1/payments creates a payment and requires an Idempotency-Key;
// GET /v1/payments lists the caller's payments, GET /v1/payments/{id}
// reads one, GET /idempotency publishes the idempotency specification.
// The caller is the bearer token of Authorization.
package draftserver

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// KeyLifetime is how long a key is remembered after its request
// completed.
//
// draft-07 §2.3: "The resource MAY require time based idempotency keys to
// be able to purge or delete a key upon its expiry. The resource SHOULD
// define such expiration policy and publish it in the documentation."
// The policy is published at SpecPath.
const KeyLifetime = 24 * time.Hour

// SpecPath is where the server publishes its idempotency specification.
const SpecPath = "/idempotency"

// maxBody bounds a request body.
const maxBody = 1 << 20

// Server is the payments API. Create it with New.
type Server struct {
	book *ledger.Book
	mux  *http.ServeMux

	mu   sync.Mutex
	keys map[scopedKey]*record
}

// scopedKey is the idempotent cache lookup key.
//
// draft-07 §5: "On the resource, implement a unique composite key as the
// idempotent cache lookup key. For example, a composite key MAY be
// implemented by combining the idempotency key sent by the client with
// other client specific attributes known only to the resource."
type scopedKey struct{ principal, key string }

// record is what the server remembers of a key.
type record struct {
	fingerprint [sha256.Size]byte
	done        bool
	status      int
	contentType string
	body        []byte
	expires     time.Time // set when done
}

// New returns the API over book.
func New(book *ledger.Book) *Server {
	s := &Server{book: book, mux: http.NewServeMux(), keys: map[scopedKey]*record{}}
	s.mux.HandleFunc("POST /v1/payments", s.create)
	s.mux.HandleFunc("GET /v1/payments", s.list)
	s.mux.HandleFunc("GET /v1/payments/{id}", s.get)
	s.mux.HandleFunc("GET "+SpecPath, publishSpec)
	return s
}

// ServeHTTP serves the API and records each answer of the guarded
// operation in the book.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/payments" {
		rec := &answerRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() { s.book.Answered(rec.status, rec.Header().Get("Content-Type")) }()
		w = rec
	}
	s.mux.ServeHTTP(w, r)
}

// create is the guarded operation.
//
// draft-07 §2.5: "For each request, a server SHOULD: Identify idempotency
// key from the HTTP Idempotency-Key request header field. Generate
// idempotency fingerprint if required. Enforce idempotency".
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	principal := caller(r)
	if principal == "" {
		writeProblem(w, http.StatusUnauthorized, "unauthorized", "Send Authorization: Bearer <token>.")
		return
	}
	key, err := parseKey(r.Header.Values("Idempotency-Key"))
	if err != nil {
		// draft-07 §2.7: "If the Idempotency-Key request header is
		// missing for a documented idempotent operation requiring this
		// header, the resource SHOULD reply with an HTTP 400 status code
		// with body containing a link pointing to relevant
		// documentation." This operation is documented (SpecPath) as
		// requiring it. A value that is not a String fails parsing, and
		// RFC 8941 §2: "When parsing fails, the entire field is ignored
		// (see Section 4.2)": such a key is a missing one.
		writeProblem(w, http.StatusBadRequest, "missing-key",
			"This operation requires an Idempotency-Key header whose value is a Structured Field String, such as \"8e03978e-40d5-43e8-bc93-6894a57f9324\".")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeProblem(w, http.StatusRequestEntityTooLarge, "too-large", "The body is larger than 1 MiB.")
		return
	}
	// draft-07 §2.4: "An idempotency fingerprint MAY be used in
	// conjunction with an idempotency key to determine the uniqueness of
	// a request. Such a fingerprint is generated from request payload
	// data by the resource." This one is the "Checksum of the entire
	// request payload."
	fingerprint := sha256.Sum256(body)
	id := scopedKey{principal, key}

	rec, isNew := s.reserve(id, fingerprint)
	switch {
	case rec.fingerprint != fingerprint:
		// draft-07 §2.2: "The idempotency key MUST be unique and MUST
		// NOT be reused with another request with a different request
		// payload." §2.7: "If there is an attempt to reuse an
		// idempotency key with a different request payload, the
		// resource SHOULD reply with a HTTP 422 status code with body
		// containing a link pointing to relevant documentation."
		// And: "Clients MUST correct the requests (with the exception of
		// 409 where no correction is required) before performing a retry
		// operation, or the resource MUST fail the request and return one
		// of the above errors." An uncorrected retry meets this branch
		// (or the missing key's) again.
		writeProblem(w, http.StatusUnprocessableEntity, "key-reused",
			"This Idempotency-Key was used with another request payload; use a new key for a new request.")
		return
	case !isNew && !rec.done:
		// draft-07 §2.6: "Concurrent Request: The request was retried
		// before the original request completed. The resource SHOULD
		// respond with a resource conflict error." §2.7: "If the request
		// is retried, while the original request is still being
		// processed, the resource SHOULD reply with an HTTP 409 status
		// code with body containing problem description."
		writeProblem(w, http.StatusConflict, "in-progress",
			"A request with the same Idempotency-Key for the same operation is being processed; retry later.")
		return
	case !isNew:
		// draft-07 §2.6: "Retry: The request was retried after the
		// original request completed. The resource SHOULD respond with
		// the result of the previously completed operation, success or
		// an error."
		w.Header().Set("Content-Type", rec.contentType)
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
		return
	}
	// draft-07 §2.6: "First time request (idempotency key and fingerprint
	// has not been seen): The resource SHOULD process the request
	// normally and respond with an appropriate response and status code."
	status, contentType, answer := s.execute(r, principal, key, body)
	s.complete(id, status, contentType, answer)
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// reserve returns the key's record, creating an in-progress one (isNew)
// when the key is unknown or expired.
func (s *Server) reserve(id scopedKey, fingerprint [sha256.Size]byte) (rec record, isNew bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.keys[id]; ok && !(r.done && time.Now().After(r.expires)) {
		return *r, false
	}
	s.keys[id] = &record{fingerprint: fingerprint}
	return *s.keys[id], true
}

// complete stores the answer of the key's one execution, success or
// error alike (§2.6 above).
func (s *Server) complete(id scopedKey, status int, contentType string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.keys[id]
	r.done, r.status, r.contentType, r.body = true, status, contentType, body
	r.expires = time.Now().Add(KeyLifetime)
}

// execute runs the payment and returns its answer.
func (s *Server) execute(r *http.Request, principal, key string, body []byte) (status int, contentType string, answer []byte) {
	if d := ledger.Delay(r.Header.Get(ledger.DelayHeader)); d > 0 {
		time.Sleep(d)
	}
	p, err := s.book.Create(principal, key, body)
	if errors.Is(err, ledger.ErrInvalidPayment) {
		return http.StatusBadRequest, problemType, problemBody(http.StatusBadRequest, "invalid-payment", err.Error())
	}
	if err != nil {
		return http.StatusInternalServerError, problemType, problemBody(http.StatusInternalServerError, "internal", "The payment failed.")
	}
	b, _ := json.Marshal(p) // a struct of strings and an int always encodes
	return http.StatusCreated, "application/json", b
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	principal := caller(r)
	if principal == "" {
		writeProblem(w, http.StatusUnauthorized, "unauthorized", "Send Authorization: Bearer <token>.")
		return
	}
	payments := s.book.List(principal)
	writeJSON(w, map[string]any{"data": payments, "total": len(payments)})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	p, ok := s.book.Get(caller(r), r.PathValue("id"))
	if !ok {
		writeProblem(w, http.StatusNotFound, "not-found", "No such payment.")
		return
	}
	writeJSON(w, p)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // payments and counts always encode
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func caller(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

// answerRecorder keeps the status an answer was sent with.
type answerRecorder struct {
	http.ResponseWriter
	status int
}

func (a *answerRecorder) WriteHeader(status int) {
	a.status = status
	a.ResponseWriter.WriteHeader(status)
}

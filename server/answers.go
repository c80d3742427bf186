package server

import (
	"net/http"
	"time"
)

// Answers writes the answers of the protocol itself, the ones the handler
// never sees. An API with its own error format implements it; the default
// is ProblemAnswers.
type Answers interface {
	// MissingKey answers a guarded request without a key.
	MissingKey(w http.ResponseWriter, err error)
	// InvalidKey answers a malformed key; err is a *KeyError or wraps
	// ErrInvalidKey.
	InvalidKey(w http.ResponseWriter, err error)
	// InProgress answers a retry while the first request still runs.
	InProgress(w http.ResponseWriter, retryAfter time.Duration)
	// KeyReused answers a key sent again with another payload.
	KeyReused(w http.ResponseWriter)
	// StoreUnavailable answers when the store cannot be reached: the
	// request did not run.
	StoreUnavailable(w http.ResponseWriter)
	// Replayed marks a replayed answer's headers and returns the status
	// to send.
	Replayed(h http.Header, status int) int
}

// StoreFullAnswers is implemented by Answers that answer a full store
// (ErrStoreFull, a *StoreFullError from MemoryStore) with the time its
// records make room, retryAfter. Answers without it answer a full store
// with StoreUnavailable.
type StoreFullAnswers interface {
	StoreFull(w http.ResponseWriter, retryAfter time.Duration)
}

// ProblemAnswers writes the protocol's answers as RFC 9457 problem
// documents and marks replays with Idempotent-Replayed: true.
type ProblemAnswers struct{}

// MissingKey implements Answers: 400 /missing-key.
func (ProblemAnswers) MissingKey(w http.ResponseWriter, err error) {
	WriteProblem(w, http.StatusBadRequest, ProblemMissingKey, "Idempotency-Key required", err.Error(), 0)
}

// InvalidKey implements Answers: 400 /invalid-key.
func (ProblemAnswers) InvalidKey(w http.ResponseWriter, err error) {
	WriteProblem(w, http.StatusBadRequest, ProblemInvalidKey, "Invalid Idempotency-Key", err.Error(), 0)
}

// InProgress implements Answers: 409 /in-progress with Retry-After.
func (ProblemAnswers) InProgress(w http.ResponseWriter, retryAfter time.Duration) {
	WriteProblem(w, http.StatusConflict, ProblemInProgress, "Request in progress",
		"a request with this key is still being processed; retry later", retryAfter)
}

// KeyReused implements Answers: 422 /key-reused.
func (ProblemAnswers) KeyReused(w http.ResponseWriter) {
	WriteProblem(w, http.StatusUnprocessableEntity, ProblemKeyReused, "Idempotency-Key reused",
		"this key was already used in this scope for a different request payload", 0)
}

// StoreUnavailable implements Answers: 503 /store-unavailable.
func (ProblemAnswers) StoreUnavailable(w http.ResponseWriter) { WriteStoreUnavailable(w) }

// StoreFull implements StoreFullAnswers: 503 /store-unavailable with
// Retry-After.
func (ProblemAnswers) StoreFull(w http.ResponseWriter, retryAfter time.Duration) {
	WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Idempotency store full",
		"the request was not executed: the store has no room for a new key now; retry after Retry-After", retryAfter)
}

// Replayed implements Answers: Idempotent-Replayed: true.
func (ProblemAnswers) Replayed(h http.Header, status int) int {
	h.Set(ReplayedHeader, "true")
	return status
}

// WriteStoreUnavailable answers 503 /store-unavailable with Retry-After:
// without the store no request may run.
func WriteStoreUnavailable(w http.ResponseWriter) {
	WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Idempotency store unavailable",
		"the request was not executed; retry later", storeUnavailableRetryAfter)
}

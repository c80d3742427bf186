package testserver

import (
	"net/http"
	"time"
)

// idemDialect is this project's protocol (PROTOCOL.md): the IETF draft's
// Idempotency-Key header, RFC 9457 problem documents, Idempotent-Replayed
// on replays, 409 /in-progress and 422 /key-reused. Every answer here is
// byte for byte what the server wrote before dialects existed.
func idemDialect() Dialect {
	return Dialect{
		Name:         DefaultDialect,
		KeyHeader:    KeyHeader,
		MaxKeyLength: MaxKeyLength,
		RequireKey:   true,
		parseKey:     func(_ *Dialect, values []string) (string, error) { return ParseKey(values) },
		missingKey: func(w http.ResponseWriter, err error) {
			WriteProblem(w, http.StatusBadRequest, ProblemMissingKey, "Idempotency-Key required", err.Error(), 0)
		},
		invalidKey: func(w http.ResponseWriter, err error) {
			WriteProblem(w, http.StatusBadRequest, ProblemInvalidKey, "Invalid Idempotency-Key", err.Error(), 0)
		},
		inProgress: func(w http.ResponseWriter, retryAfter time.Duration) {
			WriteProblem(w, http.StatusConflict, ProblemInProgress, "Request in progress",
				"a request with this key is still being processed; retry later", retryAfter)
		},
		keyReused: func(w http.ResponseWriter) {
			WriteProblem(w, http.StatusUnprocessableEntity, ProblemKeyReused, "Idempotency-Key reused",
				"this key was already used in this scope for a different request payload", 0)
		},
		storeUnavailable: writeStoreUnavailable,
		replayed: func(h http.Header, status int) int {
			h.Set(ReplayedHeader, "true")
			return status
		},
	}
}

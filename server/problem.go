package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemTypePrefix is the prefix every problem `type` URI of the
// protocol shares. Clients match on the suffix (`/in-progress`, ...).
const ProblemTypePrefix = "https://idemkit.github.io/idem/problems/"

// Problem type suffixes, one per answer the layer writes itself.
const (
	ProblemMissingKey       = "missing-key"       // 400: a guarded request without a key
	ProblemInvalidKey       = "invalid-key"       // 400: a malformed key
	ProblemKeyReused        = "key-reused"        // 422: the key came with another payload
	ProblemInProgress       = "in-progress"       // 409: the first request still runs
	ProblemStoreUnavailable = "store-unavailable" // 503: nothing ran
	ProblemInvalidRequest   = "invalid-request"   // 400: an unreadable body
	ProblemBodyTooLarge     = "body-too-large"    // 413: the body exceeds WithMaxBody
	ProblemUnauthorized     = "unauthorized"      // 401: the principal could not be found
	ProblemInternal         = "internal"          // 500: the handler panicked
)

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// WriteProblem answers with an application/problem+json document whose type
// is ProblemTypePrefix+suffix. A positive retryAfter adds a Retry-After
// header in whole seconds (rounded up).
func WriteProblem(w http.ResponseWriter, status int, suffix, title, detail string, retryAfter time.Duration) {
	body, _ := json.Marshal(Problem{
		Type:   ProblemTypePrefix + suffix,
		Title:  title,
		Status: status,
		Detail: detail,
	})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(retryAfter)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// RetryAfterSeconds rounds d up to whole seconds, at least one.
func RetryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

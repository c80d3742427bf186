package testserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemTypePrefix is the prefix every problem `type` URI of the reference
// server shares. Clients match on the suffix (`/in-progress`, ...).
const ProblemTypePrefix = "https://idemkit.github.io/idem/problems/"

// Problem type suffixes, one per case of the protocol.
const (
	ProblemMissingKey       = "missing-key"
	ProblemInvalidKey       = "invalid-key"
	ProblemKeyReused        = "key-reused"
	ProblemInProgress       = "in-progress"
	ProblemStoreUnavailable = "store-unavailable"
	ProblemInvalidRequest   = "invalid-request"
	ProblemBodyTooLarge     = "body-too-large"
	ProblemNotFound         = "not-found"
	ProblemUnauthorized     = "unauthorized"
	ProblemMethodNotAllowed = "method-not-allowed"
	ProblemUnsupportedMedia = "unsupported-media-type"
	ProblemInjectedFault    = "injected-fault"
	ProblemInternal         = "internal"
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
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(retryAfter)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// retryAfterSeconds rounds d up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

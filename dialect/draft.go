package dialect

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Pages the Draft rules come from.
const (
	draftURL   = "https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-idempotency-key-header-07"
	rfc9110URL = "https://www.rfc-editor.org/rfc/rfc9110"
	rfc9457URL = "https://www.rfc-editor.org/rfc/rfc9457"
)

// ProblemTypePrefix is where this project's problem types live; Draft
// matches problem types by their suffix, so any prefix works.
const ProblemTypePrefix = "https://idemkit.github.io/idem/problems/"

// DraftRetention is the key retention of this project's reference server
// (and of Draft): the draft leaves it to the server to publish one.
const DraftRetention = 24 * time.Hour

// Draft is the default dialect: the IETF draft
// draft-ietf-httpapi-idempotency-key-header-07 as this project's protocol
// reads it. The key travels bare in Idempotency-Key (the draft's quoted
// form with QuotedKey); keys are 1–255 visible ASCII characters; answers
// are judged by DraftClassify and operation documents by
// DraftOperationStatus.
func Draft() Dialect {
	return Dialect{
		Name:            "draft",
		KeyHeader:       "Idempotency-Key",
		MaxKeyLength:    255,
		Retention:       DraftRetention,
		ReplayHeader:    "Idempotent-Replayed",
		Classify:        DraftClassify,
		OperationStatus: DraftOperationStatus,
		Docs:            []string{draftURL, rfc9110URL, rfc9457URL},
	}
}

// DraftClassify judges an answer by the draft and RFC 9110 alone, plus
// the problem types of this project's profile (matched by suffix). It is
// the fallback a provider dialect hands what it has no rule for.
//
//   - 202 with a Location: Accepted. Any other 2xx: Success.
//   - 303: Success; the server processed the request and points at the
//     result (RFC 9110 §15.4.4). Any other 3xx after a non-idempotent
//     request: Unresolvable; 301 and 302 may follow a processed POST
//     (RFC 9110 §15.4.2, §15.4.3) and are never followed as a GET.
//   - 409, whatever its body: InProgress. The draft (§2.7) defines a 409
//     on a keyed request as "the original is still being processed".
//   - 422 whose problem type ends /key-reused: KeyReused. Other 422s
//     are Refused: many APIs answer validation errors with 422, and the
//     draft gives no way to tell them apart from key reuse.
//   - 400 whose problem type ends /missing-key or /invalid-key:
//     Rejected; the server refused the key before executing anything.
//   - 503 whose problem type ends /store-unavailable: RetryNotExecuted
//     (the server failed closed before executing).
//   - 408, 425, 429: RetryNotExecuted.
//   - 501, 505: Refused (the server cannot do this request at all).
//   - Every other 5xx: RetryMaybeExecuted.
//   - Every other 4xx (401, 403, 407 …): Refused.
//   - 1xx: Unresolvable.
func DraftClassify(a Answer) Verdict {
	code := a.Status
	switch {
	case code == http.StatusAccepted && a.Header.Get("Location") != "":
		return Accepted
	case code >= 200 && code <= 299:
		return Success
	case code == http.StatusSeeOther:
		return Success
	case code >= 300 && code <= 399:
		return Unresolvable
	case code < 200:
		return Unresolvable
	}
	switch code {
	case http.StatusConflict:
		return InProgress
	case http.StatusUnprocessableEntity:
		if ProblemTypeHasSuffix(a, "/key-reused") {
			return KeyReused
		}
		return Refused
	case http.StatusBadRequest:
		if ProblemTypeHasSuffix(a, "/missing-key") || ProblemTypeHasSuffix(a, "/invalid-key") {
			return Rejected
		}
		return Refused
	case http.StatusServiceUnavailable:
		if ProblemTypeHasSuffix(a, "/store-unavailable") {
			return RetryNotExecuted
		}
		return RetryMaybeExecuted
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return RetryNotExecuted
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return Refused
	}
	if code >= 500 {
		return RetryMaybeExecuted
	}
	return Refused
}

// ProblemType returns the type of an RFC 9457 problem document
// (application/problem+json), "" when a's body is not one. A problem
// without a type is "about:blank" (RFC 9457 §3.1.1).
func ProblemType(a Answer) string {
	mediaType, _, err := mime.ParseMediaType(a.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/problem+json" {
		return ""
	}
	var doc struct {
		Type *string `json:"type"`
	}
	if json.Unmarshal(a.Body, &doc) != nil {
		return ""
	}
	if doc.Type == nil {
		return "about:blank"
	}
	return *doc.Type
}

// ProblemTypeHasSuffix reports whether a is a problem document whose type
// ends with suffix.
func ProblemTypeHasSuffix(a Answer, suffix string) bool {
	return strings.HasSuffix(ProblemType(a), suffix)
}

// Operation status words, lower case with '-' and ' ' folded to '_'.
// Only the success, failed and canceled words are verdicts, and each is
// on its list because a source documents it: this project's reference
// server (internal/testserver/payouts.go: "pending", "succeeded",
// "failed") and Azure's long-running operations ("NotStarted",
// "Running", "Succeeded", "Failed", "Canceled",
// https://github.com/microsoft/api-guidelines/blob/vNext/azure/Guidelines.md#long-running-operations).
// The pending words say only "poll again", which is no verdict. Any other
// word is OperationUnknown: a guess either way could record a payment
// that was made as failed, or one that was not as paid.
var (
	pendingWords = map[string]bool{
		"pending": true, "processing": true, "running": true, "queued": true,
		"in_progress": true, "inprogress": true, "accepted": true,
		"notstarted": true, "not_started": true, "scheduled": true,
	}
	successWords = map[string]bool{
		"succeeded": true,
	}
	failedWords = map[string]bool{
		"failed": true,
	}
	canceledWords = map[string]bool{
		"canceled": true,
	}
)

// DraftOperationStatus reads the common shapes of an operation document:
//
//   - a JSON object with a string "status" (this project's payouts,
//     Azure's long-running operations: "NotStarted", "Running",
//     "Succeeded", "Failed", "Canceled"): read by StatusWord, in any
//     case; a word it does not list, or a status that is not a string, is
//     OperationUnknown;
//   - a JSON object with a boolean "done" (Google's long-running
//     operations, https://cloud.google.com/service-infrastructure/docs/service-management/reference/rest/v1/operations:
//     "If true, the operation is completed, and either error or response
//     is available"): false is pending, true with an "error" member is
//     failed, true otherwise is success.
//
// A JSON object with neither member is a plain resource, the operation's
// result: OperationSucceeded. Anything else (not JSON, a JSON array or
// scalar, an empty body) proves nothing: OperationUnknown.
func DraftOperationStatus(body []byte) OperationStatus {
	var doc struct {
		Status json.RawMessage  `json:"status"`
		Done   *bool            `json:"done"`
		Error  *json.RawMessage `json:"error"`
	}
	if !isJSONObject(body) || json.Unmarshal(body, &doc) != nil {
		return OperationUnknown
	}
	if doc.Done != nil {
		switch {
		case !*doc.Done:
			return OperationPending
		case doc.Error != nil && string(*doc.Error) != "null":
			return OperationFailed
		}
		if doc.Status == nil {
			return OperationSucceeded
		}
	}
	if doc.Status == nil {
		return OperationSucceeded
	}
	var word string
	if json.Unmarshal(doc.Status, &word) != nil {
		return OperationUnknown
	}
	return StatusWord(word)
}

// isJSONObject reports whether body, past leading white space, opens a
// JSON object.
func isJSONObject(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// StatusWord reads one status word as DraftOperationStatus does: the
// words of the reference server and of Azure's long-running operations,
// in any case, with '-' and ' ' read as '_'; any other word is
// OperationUnknown.
func StatusWord(s string) OperationStatus {
	w := foldWord(s)
	switch {
	case pendingWords[w]:
		return OperationPending
	case successWords[w]:
		return OperationSucceeded
	case failedWords[w]:
		return OperationFailed
	case canceledWords[w]:
		return OperationCanceled
	}
	return OperationUnknown
}

// foldWord is a status word in lower case, trimmed, with '-' and ' ' read
// as '_'.
func foldWord(s string) string {
	return strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
}

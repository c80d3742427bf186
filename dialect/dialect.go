package dialect

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Verdict is what one answer to a keyed request says about the request's
// effect and about sending it again.
type Verdict int

const (
	// Unjudged is the zero Verdict; a Classify never returns it. The client
	// treats it as Refused.
	Unjudged Verdict = iota
	// Success: the request was executed and this is its final answer (a
	// 2xx, a replay of one, or a 303 pointing at the result).
	Success
	// Accepted: the request was taken on and its outcome is an operation
	// to poll (202 with a Location).
	Accepted
	// InProgress: an earlier request with this key is still executing.
	// Retry later with the same key; the effect may still happen.
	InProgress
	// KeyReused: the key belongs to another payload. Final for an intent
	// nothing was sent of before. After an attempt that may have taken
	// effect it proves nothing (some providers answer a duplicate of a
	// request still running this way), and the intent stays unsettled.
	KeyReused
	// Rejected: the server proves it did not, and will not, execute the
	// request (the key itself was refused, say). Final, and a true
	// failure even after an attempt whose answer was lost.
	Rejected
	// Refused: a final refusal that proves nothing about earlier
	// attempts (a validation error, 401, 403, an unexpected 4xx, 501).
	// The intent fails when no earlier attempt may have taken effect;
	// otherwise it stays unsettled, resumable and reconcilable.
	Refused
	// RetryNotExecuted: the server did not execute the request this time
	// (rate limited, overloaded before reading it). Retry with the same key.
	RetryNotExecuted
	// RetryMaybeExecuted: the request may have been executed (a 5xx).
	// Retry with the same key, which makes the resend safe.
	RetryMaybeExecuted
	// Unresolvable: the request may have been executed and resending it
	// will not tell (a replayed 500, a 301/302 after a POST). Stop; the
	// intent stays unsettled for a reconciliation.
	Unresolvable
)

// String names the verdict for logs and reports.
func (v Verdict) String() string {
	switch v {
	case Success:
		return "success"
	case Accepted:
		return "accepted"
	case InProgress:
		return "in-progress"
	case KeyReused:
		return "key-reused"
	case Rejected:
		return "rejected"
	case Refused:
		return "refused"
	case RetryNotExecuted:
		return "retry-not-executed"
	case RetryMaybeExecuted:
		return "retry-maybe-executed"
	case Unresolvable:
		return "unresolvable"
	default:
		return "unjudged"
	}
}

// Retry reports whether the verdict asks for another attempt with the
// same key.
func (v Verdict) Retry() bool {
	return v == InProgress || v == RetryNotExecuted || v == RetryMaybeExecuted
}

// MayHaveExecuted reports whether, after this answer, the request may have
// taken effect without the client holding its final answer.
func (v Verdict) MayHaveExecuted() bool {
	return v == InProgress || v == RetryMaybeExecuted || v == Unresolvable
}

// Answer is what a dialect is shown of one response.
type Answer struct {
	// Method is the request's method.
	Method string
	// Status is the response's status code.
	Status int
	// Header is the response's header; read it, never change it.
	Header http.Header
	// Body holds the first BodyPeek bytes of a non-2xx response's body
	// (nil for a 2xx): enough for an error document.
	Body []byte
}

// BodyPeek is how much of a non-2xx body Classify is shown.
const BodyPeek = 64 << 10

// OperationStatus is what an operation document (the resource a 202's
// Location names) says of the work it tracks.
type OperationStatus int

const (
	// OperationSucceeded: final, and the work succeeded: a status word
	// the dialect's provider documents as success, or a JSON object that
	// names no status at all (a plain resource, the operation's result).
	OperationSucceeded OperationStatus = iota
	// OperationPending: not final yet; poll again.
	OperationPending
	// OperationFailed: final, and the work failed.
	OperationFailed
	// OperationCanceled: final, and the work was canceled before it
	// took effect.
	OperationCanceled
	// OperationUnknown: the document does not say: a status word the
	// dialect's provider does not document, a status that is not a string,
	// a body that is not a JSON document. It proves nothing, so the intent
	// stays Accepted (unsettled) and the caller's error matches
	// ErrOutcomeUnknown.
	OperationUnknown
)

// String names the status for logs and reports.
func (s OperationStatus) String() string {
	switch s {
	case OperationPending:
		return "pending"
	case OperationFailed:
		return "failed"
	case OperationCanceled:
		return "canceled"
	case OperationUnknown:
		return "unknown"
	default:
		return "succeeded"
	}
}

// Dialect is how one provider speaks idempotency. Build one from Draft (or
// a provider's) and change what differs; the zero Dialect is invalid
// (Validate says why).
type Dialect struct {
	// Name names the dialect in errors, logs and reports.
	Name string
	// KeyHeader is the request header that carries the key, such as
	// "Idempotency-Key". Empty when the key travels in the body
	// (KeyField, or PlaceKey).
	KeyHeader string
	// KeyField is the top-level member of a JSON object body that
	// carries the key (Square's "idempotency_key"). Empty when the key
	// travels in a header. A body that already holds the member keeps
	// its value as the intent's key.
	KeyField string
	// PlaceKey writes key into a request body that carries none, for a
	// provider whose key travels in the body at a place no member name
	// describes (Shopify's GraphQL @idempotent directive). Set it with
	// SplitKey, and leave KeyHeader and KeyField empty. Its errors match
	// ErrNoKeyPlace when the body has no place for a key.
	PlaceKey func(body []byte, key string) ([]byte, error)
	// SplitKey reads the key a request body carries at PlaceKey's place:
	// the key, the body without it, and whether there is one. For a key
	// PlaceKey placed, rest is byte for byte the body PlaceKey was given,
	// so that the body can be checked against a fingerprint taken before
	// the key was placed. Its errors match ErrNoKeyPlace when the body
	// has no place for a key (not a GraphQL request, say), or a key in a
	// form it cannot read.
	SplitKey func(body []byte) (key string, rest []byte, found bool, err error)
	// SuccessBodies shows Classify the first BodyPeek bytes of 2xx
	// bodies too, for an API that reports failures inside a 200 answer
	// (GraphQL's errors and userErrors).
	SuccessBodies bool
	// QuotedKey sends the key as an RFC 8941 Structured Field String
	// ("…", with " and \ escaped), the form the IETF draft defines.
	QuotedKey bool
	// MaxKeyLength is the longest key the provider accepts, in bytes.
	// Keys are always 1 or more visible ASCII characters.
	MaxKeyLength int
	// Retention is how long the provider documents that it keeps a key;
	// an intent older than this is never resent. Zero: not documented,
	// and the client's own retention applies.
	Retention time.Duration
	// ReplayHeader is the response header (with a true value) by which
	// the provider marks a replayed answer; empty if it marks none.
	ReplayHeader string
	// Classify judges one answer to a keyed request.
	Classify func(Answer) Verdict
	// OperationStatus reads the status of an operation document (the
	// body of a 2xx answer to a poll).
	OperationStatus func(body []byte) OperationStatus
	// SecretHeaders are the request headers that carry the provider's
	// credentials, as its authentication page documents them (Adyen's
	// X-API-Key, say). A client speaking the dialect treats them as it
	// treats the headers WithSecretHeaders names: never stored, sent only
	// to the intent's own origin (on redirects and polls too), and part
	// of the intent's principal. Authorization, Proxy-Authorization and
	// Cookie are secret whatever the dialect says.
	SecretHeaders []string
	// Docs are the pages the dialect's rules come from.
	Docs []string
}

// Validate reports what makes d unusable, or nil.
func (d Dialect) Validate() error {
	var problems []string
	places := 0
	for _, set := range []bool{d.KeyHeader != "", d.KeyField != "", d.PlaceKey != nil || d.SplitKey != nil} {
		if set {
			places++
		}
	}
	switch {
	case places == 0:
		problems = append(problems, "none of KeyHeader, KeyField and PlaceKey is set")
	case places > 1:
		problems = append(problems, "more than one of KeyHeader, KeyField and PlaceKey is set")
	}
	if (d.PlaceKey == nil) != (d.SplitKey == nil) {
		problems = append(problems, "PlaceKey and SplitKey go together")
	}
	if d.KeyHeader != "" && !validHeaderName(d.KeyHeader) {
		problems = append(problems, fmt.Sprintf("KeyHeader %q is not a valid header name", d.KeyHeader))
	}
	if d.KeyHeader == "" && d.QuotedKey {
		problems = append(problems, "QuotedKey applies to a header key only")
	}
	for _, name := range d.SecretHeaders {
		switch {
		case !validHeaderName(name):
			problems = append(problems, fmt.Sprintf("SecretHeaders: %q is not a valid header name", name))
		case d.KeyHeader != "" && strings.EqualFold(name, d.KeyHeader):
			problems = append(problems, fmt.Sprintf("SecretHeaders: %q is the KeyHeader, which the client sets and never hides", name))
		}
	}
	if d.MaxKeyLength < 1 {
		problems = append(problems, fmt.Sprintf("MaxKeyLength %d: need at least 1", d.MaxKeyLength))
	}
	if d.Retention < 0 {
		problems = append(problems, fmt.Sprintf("Retention %s is negative", d.Retention))
	}
	if d.Classify == nil {
		problems = append(problems, "Classify is nil")
	}
	if d.OperationStatus == nil {
		problems = append(problems, "OperationStatus is nil")
	}
	if len(problems) == 0 {
		return nil
	}
	name := d.Name
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Errorf("dialect %s: %s", name, strings.Join(problems, "; "))
}

// KeyInBody reports whether the key travels in the request body
// (KeyField or PlaceKey) rather than in a header.
func (d Dialect) KeyInBody() bool {
	return d.KeyField != "" || d.PlaceKey != nil
}

// ErrNoKeyPlace is what the errors of a dialect's PlaceKey and SplitKey
// match when a request body has no place for the key, or holds one in a
// form the dialect cannot read.
var ErrNoKeyPlace = errors.New("the request body has no place for the idempotency key")

// ErrInvalidKey is what CheckKey's errors match.
var ErrInvalidKey = errors.New("invalid idempotency key")

// CheckKey reports whether k is a key this dialect's provider accepts:
// 1 to MaxKeyLength visible ASCII characters (0x21–0x7E).
func (d Dialect) CheckKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(k) > d.MaxKeyLength {
		return fmt.Errorf("%w: %d bytes, %s accepts at most %d", ErrInvalidKey, len(k), d.Name, d.MaxKeyLength)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("%w: byte %d is 0x%02x (need visible ASCII, 0x21-0x7E)", ErrInvalidKey, i, k[i])
		}
	}
	return nil
}

// HeaderValue is the KeyHeader value that carries k: the bare key, or an
// RFC 8941 §3.3.3 String when QuotedKey is set.
func (d Dialect) HeaderValue(k string) string {
	if !d.QuotedKey {
		return k
	}
	return QuoteKey(k)
}

// QuoteKey returns k as an RFC 8941 §3.3.3 Structured Field String:
// in double quotes, with " and \ escaped by a backslash.
func QuoteKey(k string) string {
	var b strings.Builder
	b.Grow(len(k) + 2)
	b.WriteByte('"')
	for i := 0; i < len(k); i++ {
		if k[i] == '"' || k[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	b.WriteByte('"')
	return b.String()
}

// Replayed reports whether h marks a replayed answer in this dialect.
func (d Dialect) Replayed(h http.Header) bool {
	return d.ReplayHeader != "" && strings.EqualFold(strings.TrimSpace(h.Get(d.ReplayHeader)), "true")
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

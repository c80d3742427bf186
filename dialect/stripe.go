package dialect

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Pages the Stripe rules come from (API v1; API v2 replays differently and
// keeps keys 30 days, so it is not this dialect).
const (
	stripeIdempotencyURL = "https://docs.stripe.com/api/idempotent_requests"
	stripeLowLevelURL    = "https://docs.stripe.com/error-low-level"
	stripeErrorsURL      = "https://docs.stripe.com/api/errors"
	stripeErrorCodesURL  = "https://docs.stripe.com/error-codes"
	stripeRateLimitsURL  = "https://docs.stripe.com/rate-limits"
	stripeLifecycleURL   = "https://docs.stripe.com/payments/paymentintents/lifecycle"
	stripeAuthURL        = "https://docs.stripe.com/api/authentication"
)

// StripeRetention is how long Stripe keeps a key: keys "can be removed after
// they're at least 24 hours old"
// (https://docs.stripe.com/api/idempotent_requests) and "expire out of the
// system after 24 hours" (https://docs.stripe.com/error-low-level).
const StripeRetention = 24 * time.Hour

// Stripe is the dialect of the Stripe API (v1): the key travels bare in
// Idempotency-Key, up to 255 characters, kept 24 hours; replays carry
// Idempotent-Replayed: true; answers are judged by Stripe's documented error
// types and codes and its Stripe-Should-Retry header.
func Stripe() Dialect {
	return Dialect{
		Name: "stripe",
		// "Idempotency keys are sent in the Idempotency-Key header."
		// (https://docs.stripe.com/error-low-level)
		KeyHeader: "Idempotency-Key",
		// "Idempotency keys are up to 255 characters long."
		// (https://docs.stripe.com/api/idempotent_requests)
		MaxKeyLength: 255,
		Retention:    StripeRetention,
		// "To identify a previously executed response that's being replayed
		// from the server, look for the header Idempotent-Replayed: true."
		// (https://docs.stripe.com/error-low-level)
		ReplayHeader:    "Idempotent-Replayed",
		Classify:        stripeClassify,
		OperationStatus: stripeOperationStatus,
		// "Authentication to the API is performed via HTTP Basic Auth", or
		// "Authorization: Bearer" with the same key
		// (https://docs.stripe.com/api/authentication): secret by default
		// anyway, listed as the page documents it.
		SecretHeaders: []string{"Authorization"},
		Docs: []string{stripeIdempotencyURL, stripeLowLevelURL, stripeErrorsURL,
			stripeErrorCodesURL, stripeRateLimitsURL, stripeLifecycleURL, stripeAuthURL},
	}
}

// stripeError is the body of a Stripe error: {"error":{"type","code",...}}
// (https://docs.stripe.com/api/errors). Plain JSON, not problem+json.
type stripeError struct {
	Type string
	Code string
}

func readStripeError(body []byte) stripeError {
	var doc struct {
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &doc) // a body that is not one reads as no type, no code
	return stripeError{Type: doc.Error.Type, Code: doc.Error.Code}
}

// stripeClassify judges an answer by Stripe's rules, then lets
// Stripe-Should-Retry, when present, overrule them.
func stripeClassify(a Answer) Verdict {
	if a.Status < 400 {
		return DraftClassify(a)
	}
	return stripeShouldRetry(a.Header, stripeRules(a))
}

func stripeRules(a Answer) Verdict {
	e := readStripeError(a.Body)
	switch {
	// 409: "The request conflicts with another request (perhaps due to using
	// the same idempotent key)" (https://docs.stripe.com/error-low-level);
	// idempotency_key_in_use: "currently being used in another request"
	// (https://docs.stripe.com/error-codes). A concurrent conflict is not
	// saved, "You can retry these requests"
	// (https://docs.stripe.com/api/idempotent_requests). The other request
	// may still take effect.
	case a.Status == http.StatusConflict || e.Code == "idempotency_key_in_use":
		return InProgress
	// idempotency_error: "an Idempotency-Key is re-used on a request that
	// does not match the first request's API endpoint and parameters"
	// (https://docs.stripe.com/api/errors). The concurrent case has its own
	// answer above, so this one can only mean another payload owns the key.
	case a.Status < 500 && e.Type == "idempotency_error":
		return KeyReused
	// lock_timeout: a lock "couldn't be acquired in time"
	// (https://docs.stripe.com/rate-limits). Stripe does not say the request
	// had not started, so it may have.
	case a.Status == http.StatusTooManyRequests && e.Code == "lock_timeout":
		return RetryMaybeExecuted
	// "rate limiters run before the API's idempotency layer"
	// (https://docs.stripe.com/error-low-level): a rate-limited request was
	// not executed.
	case a.Status == http.StatusTooManyRequests:
		return RetryNotExecuted
	// 500s are saved and replayed: "the idempotency-cached response to those
	// requests won't change" and they are "indeterminate"
	// (https://docs.stripe.com/error-low-level). A replayed one will be
	// replayed again.
	case a.Status >= 500 && headerTrue(a.Header, "Idempotent-Replayed"):
		return Unresolvable
	// A replayed 4xx is the saved answer of the key's first request: Stripe
	// "saves the status code and body of the first request made with a
	// given idempotency key after endpoint execution begins. Retries with
	// the same key return the saved response"
	// (https://docs.stripe.com/api/idempotent_requests), marked
	// Idempotent-Replayed: true (https://docs.stripe.com/error-low-level).
	// So the request ran once and failed with this answer (a card decline),
	// whatever earlier attempts were lost: a final failure, which the
	// client settles even after a lost answer. (409 and 429 are answered
	// above: concurrent conflicts and rate limits are not saved.)
	case a.Status >= 400 && a.Status < 500 && headerTrue(a.Header, "Idempotent-Replayed"):
		return Rejected
	}
	// Everything else falls back to Draft: a fresh 5xx is RetryMaybeExecuted
	// (retry with the same key, https://docs.stripe.com/error-low-level); a
	// 402 card decline and other 4xx are Refused, since a saved 4xx may be
	// the outcome of an earlier attempt
	// (https://docs.stripe.com/error-low-level) and Stripe does not say which
	// 400s ran before the idempotency layer.
	return DraftClassify(a)
}

// stripeShouldRetry applies Stripe-Should-Retry
// (https://docs.stripe.com/error-low-level): "true indicates that a client
// should retry", "false means that a client should not retry the request
// because it won't have an additional effect", absent means decide by the
// status. "false" proves nothing about whether the request ran, so a verdict
// that could have executed becomes Unresolvable, and one that did not becomes
// Refused.
func stripeShouldRetry(h http.Header, v Verdict) Verdict {
	switch strings.ToLower(strings.TrimSpace(h.Get("Stripe-Should-Retry"))) {
	case "true":
		if !v.Retry() {
			return RetryMaybeExecuted
		}
	case "false":
		switch {
		case v.Retry() && v.MayHaveExecuted():
			return Unresolvable
		case v.Retry():
			return Refused
		}
	}
	return v
}

// headerTrue reports whether header name holds "true", in any case.
func headerTrue(h http.Header, name string) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get(name)), "true")
}

// stripeOperationStatus reads a PaymentIntent's status words
// (https://docs.stripe.com/payments/paymentintents/lifecycle) and leaves the
// rest to DraftOperationStatus ("processing" pending, "canceled",
// "succeeded"). Stripe v1 answers synchronously and documents no 202
// operations, so this matters only to a caller that polls an intent itself.
func stripeOperationStatus(body []byte) OperationStatus {
	var doc struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &doc) == nil {
		switch doc.Status {
		// requires_payment_method is both the first state and the state a
		// failed attempt returns to "so that the payment can be retried";
		// like requires_confirmation and requires_action it waits for the
		// payer, so none is final.
		case "requires_payment_method", "requires_confirmation", "requires_action":
			return OperationPending
		// requires_capture: the payment is authorised, funds held.
		case "requires_capture":
			return OperationSucceeded
		}
	}
	return DraftOperationStatus(body)
}

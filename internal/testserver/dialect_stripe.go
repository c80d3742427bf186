package testserver

import (
	"net/http"
	"time"

	"github.com/idemkit/idem/server"
)

// Stripe API v1, from its published documentation. Every rule cites its
// page; what no page states is marked "chosen" and is never kinder to the
// client than Stripe would be.
//
// Left out, because no stored Stripe page confirms them: an
// Idempotent-Replayed header on replays (so a replay looks exactly like
// the first answer) and the Stripe-Should-Retry header.
const (
	// https://docs.stripe.com/api/idempotent_requests: "Idempotency keys
	// are up to 255 characters long."
	stripeMaxKeyLength = 255
	// https://docs.stripe.com/api/idempotent_requests: keys may be removed
	// "after they're at least 24 hours old".
	stripeRetention = 24 * time.Hour
)

// stripeError is Stripe's error document, {"error": {...}}, whose type is
// one of api_error, card_error, idempotency_error or
// invalid_request_error (https://docs.stripe.com/api/errors).
type stripeError struct {
	Error stripeErrorBody `json:"error"`
}

type stripeErrorBody struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

func stripeDialect() Dialect {
	return Dialect{
		Name: "stripe",
		// https://docs.stripe.com/api/idempotent_requests: the curl example
		// sends -H "Idempotency-Key: ...".
		KeyHeader:    KeyHeader,
		MaxKeyLength: stripeMaxKeyLength,
		// https://docs.stripe.com/api/idempotent_requests: "To perform an
		// idempotent request, provide an additional IdempotencyKey";
		// "All POST requests accept idempotency keys" — accept, not
		// require: without one the request simply runs again.
		RequireKey: false,
		Retention:  stripeRetention,
		// https://docs.stripe.com/api/idempotent_requests: "Stripe saves the
		// status code and body of the first request ... after endpoint
		// execution begins. Retries with the same key return the saved
		// response, including 500 errors." Validation failures are not
		// saved ("If incoming parameters fail validation ... we don't save
		// the idempotent result"), which the core's 4xx rule already does.
		Store5xx: true,
		// Chosen: the pages do not say what a key that is too long gets;
		// a 400 invalid_request_error is Stripe's documented type for bad
		// parameters (https://docs.stripe.com/api/errors).
		invalidKey: func(w http.ResponseWriter, err error) {
			writeJSONError(w, http.StatusBadRequest, stripeError{stripeErrorBody{
				Type: "invalid_request_error", Message: "Invalid Idempotency-Key: " + err.Error(),
			}})
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, stripeError{stripeErrorBody{
				Type: "invalid_request_error", Message: "Missing Idempotency-Key.",
			}})
		},
		// https://docs.stripe.com/api/errors: "409 Conflict — The request
		// conflicts with another request (perhaps due to using the same
		// idempotent key)". The code idempotency_key_in_use is Stripe's
		// published error code (ErrorCodeIdempotencyKeyInUse in
		// https://github.com/stripe/stripe-go/blob/master/error.go). Not
		// saved: "the request conflicts with another request that's
		// executing concurrently, we don't save the idempotent result ...
		// You can retry these requests"
		// (https://docs.stripe.com/api/idempotent_requests). Chosen: the
		// type idempotency_error (no page gives the type of this answer)
		// and no Retry-After (none is documented).
		inProgress: func(w http.ResponseWriter, _ time.Duration) {
			writeJSONError(w, http.StatusConflict, stripeError{stripeErrorBody{
				Type: "idempotency_error", Code: "idempotency_key_in_use",
				Message: "Another request with this Idempotency-Key is still being processed. Retry it later with the same key.",
			}})
		},
		// https://docs.stripe.com/api/idempotent_requests: "The idempotency
		// layer compares incoming parameters to those of the original
		// request and errors if they're not the same"; idempotency_error is
		// for "an Idempotency-Key ... re-used on a request that does not
		// match the first request's API endpoint and parameters"
		// (https://stripe.dev/stripe-terminal-android/external/com.stripe.stripeterminal.external.api/-api-error-type/-i-d-e-m-p-o-t-e-n-c-y_-e-r-r-o-r/index.html).
		// Chosen: status 400, "The request was unacceptable" in
		// https://docs.stripe.com/api/errors; the idempotency page names
		// no status.
		keyReused: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusBadRequest, stripeError{stripeErrorBody{
				Type:    "idempotency_error",
				Message: "This Idempotency-Key was already used with different parameters. Use a new key for a different request.",
			}})
		},
		// Chosen: no page covers the store being down; the project's 503
		// problem says the request did not run.
		storeUnavailable: server.WriteStoreUnavailable,
		replayed:         noReplayMarker,
	}
}

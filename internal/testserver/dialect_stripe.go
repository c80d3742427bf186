package testserver

import (
	"net/http"
	"time"
)

// Stripe API v1, from its published documentation. Every rule cites its
// page; what no page states is marked "chosen" and is never kinder to the
// client than Stripe would be.
//
// Left out, because no Stripe page or SDK confirms when Stripe sends it:
// the Stripe-Should-Retry header (https://docs.stripe.com/error-low-level
// says what its values mean, not which answers carry it; none of the in-
// progress answers captured from Stripe, below, has it, and stripe-go
// never reads it for an answer with an error document: its shouldRetry
// asks the parsed *stripe.Error, whose canRetry is true only for a 429
// lock_timeout); Retry-After; the Original-Request and Request-Id headers;
// the error fields doc_url, param and request_log_url beyond the one
// doc_url quoted below.
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
// invalid_request_error (https://docs.stripe.com/api/errors: "type enum:
// The type of error returned. One of api_error, card_error,
// idempotency_error, or invalid_request_error").
type stripeError struct {
	Error stripeErrorBody `json:"error"`
}

type stripeErrorBody struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	DocURL  string `json:"doc_url,omitempty"`
	Message string `json:"message"`
}

// Stripe's error types (https://docs.stripe.com/api/errors).
const (
	stripeAPIError            = "api_error"
	stripeIdempotencyError    = "idempotency_error"
	stripeInvalidRequestError = "invalid_request_error"
)

// stripeReplayedHeader marks a replay: "To identify a previously executed
// response that's being replayed from the server, look for the header
// Idempotent-Replayed: true." (https://docs.stripe.com/error-low-level)
const stripeReplayedHeader = "Idempotent-Replayed"

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
		// Every answer carries the key back in Idempotency-Key: stripe-go
		// reads it from the response (APIResponse.IdempotencyKey =
		// res.Header.Get("Idempotency-Key"), newAPIResponse in
		// https://github.com/stripe/stripe-go/blob/master/stripe.go), as
		// stripe-node does ("Stripe responds with lowercase header
		// names/keys", RequestSender.js), and stripe-mock echoes it "like
		// the real Stripe API" (https://github.com/stripe/stripe-mock/pull/77).
		echoKey: true,
		// https://docs.stripe.com/api: "Our API has predictable
		// resource-oriented URLs, accepts form-encoded request bodies,
		// returns JSON-encoded responses";
		// stripe-go sends its v1 calls as
		// application/x-www-form-urlencoded. JSON bodies stay accepted, as
		// every dialect of this server takes them.
		formBodies: true,
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
				Type: stripeInvalidRequestError, Message: "Invalid Idempotency-Key: " + err.Error(),
			}})
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, stripeError{stripeErrorBody{
				Type: stripeInvalidRequestError, Message: "Missing Idempotency-Key.",
			}})
		},
		inProgress: stripeInProgress,
		// https://docs.stripe.com/api/idempotent_requests: "The idempotency
		// layer compares incoming parameters to those of the original
		// request and errors if they're not the same"; idempotency_error is
		// for "an Idempotency-Key ... re-used on a request that does not
		// match the first request's API endpoint and parameters"
		// (https://stripe.dev/stripe-terminal-android/external/com.stripe.stripeterminal.external.api/-api-error-type/-i-d-e-m-p-o-t-e-n-c-y_-e-r-r-o-r/index.html).
		// The idempotency page names no status: 400 and the message are
		// those Stripe sent, as integrations captured them
		// (https://github.com/stripe/stripe-ruby/issues/503: "you get 400
		// error with message "Keys for idempotent requests can only be
		// used with the same parameters they were first used with..."";
		// raised as Stripe::IdempotencyError in
		// https://github.com/fjordllc/bootcamp/issues/4268).
		keyReused: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusBadRequest, stripeError{stripeErrorBody{
				Type: stripeIdempotencyError,
				Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
					"Try using a key other than this one if you meant to execute a different request.",
			}})
		},
		// Chosen: no page covers the store being down; Stripe's 5xx errors
		// are api_error, "any other type of problem (e.g., a temporary
		// problem with Stripe's servers)" (error types of
		// https://docs.stripe.com/api/errors).
		storeUnavailable: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusServiceUnavailable, stripeError{stripeErrorBody{
				Type: stripeAPIError, Message: "Stripe's idempotency store is unavailable; nothing was executed. Retry with the same key.",
			}})
		},
		replayed: func(h http.Header, status int) int {
			h.Set(stripeReplayedHeader, "true")
			return status
		},
		problemAs: stripeProblem,
	}
}

// stripeInProgress answers a duplicate of a request still running as
// Stripe does. https://docs.stripe.com/api/errors: "409 Conflict — The
// request conflicts with another request (perhaps due to using the same
// idempotent key)"; https://docs.stripe.com/error-codes:
// idempotency_key_in_use, "The idempotency key provided is currently being
// used in another request." The type invalid_request_error, doc_url and
// message are those of the answers Stripe sent, as two integrations
// captured them (https://github.com/beam-community/stripity-stripe/issues/564,
// https://github.com/woocommerce/woocommerce-gateway-stripe/pull/503); no
// page names the type, and idempotency_error is documented for another
// case only (a key "re-used on a request that does not match the first
// request's API endpoint and parameters"). Not saved: "the request
// conflicts with another request that's executing concurrently, we don't
// save the idempotent result ... You can retry these requests"
// (https://docs.stripe.com/api/idempotent_requests).
func stripeInProgress(w http.ResponseWriter, _ time.Duration) {
	writeJSONError(w, http.StatusConflict, stripeError{stripeErrorBody{
		Type: stripeInvalidRequestError, Code: "idempotency_key_in_use",
		DocURL: "https://stripe.com/docs/error-codes/idempotency-key-in-use",
		Message: "There is currently another in-progress request using this Idempotent Key (that probably means " +
			"you submitted twice, and the other request is still going through). Please try again later.",
	}})
}

// stripeProblem is the Stripe error document of one of the reference
// API's problems: api_error for a 5xx, "a temporary problem with Stripe's
// servers"; invalid_request_error for a 4xx, "Invalid request errors arise
// when your request has invalid parameters" (error types of
// https://docs.stripe.com/api/errors), with code resource_missing for a
// 404 (https://docs.stripe.com/error-codes). A 409 of the API (a request
// whose hold on its key ended before its effect committed) is the
// in-progress answer: nothing ran, retry with the key.
func stripeProblem(status int, p Problem) any {
	body := stripeErrorBody{Type: stripeInvalidRequestError, Message: p.Detail}
	if body.Message == "" {
		body.Message = p.Title
	}
	switch {
	case status >= 500:
		body.Type = stripeAPIError
	case status == http.StatusNotFound:
		body.Code = "resource_missing"
	case status == http.StatusConflict:
		body.Code = "idempotency_key_in_use"
	}
	return stripeError{body}
}

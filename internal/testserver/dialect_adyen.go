package testserver

import (
	"net/http"
	"time"
)

// Adyen, from https://docs.adyen.com/development-resources/api-idempotency
// (the "API idempotency" page) unless a rule names another page. What no
// page states is marked "chosen" and is never kinder to the client than
// Adyen would be.
const (
	// "The <key> is a unique identifier for the message with a maximum of
	// 64 characters."
	adyenMaxKeyLength = 64
	// "Idempotency keys are valid for a minimum period of 7 days after
	// first submission."
	adyenRetention = 7 * 24 * time.Hour
	// adyenTransientHeader marks an answer that "can be retried at a later
	// time using the same idempotency key".
	adyenTransientHeader = "Transient-Error"
)

// adyenError is the error document of Adyen's Checkout API: status,
// errorCode, message and errorType, as in the example of
// https://docs.adyen.com/development-resources/error-codes. pspReference,
// "the PSP reference of the payment", is left out: these answers make none.
type adyenError struct {
	Status    int    `json:"status"`
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
	ErrorType string `json:"errorType"`
}

func adyenDialect() Dialect {
	return Dialect{
		Name: "adyen",
		// "send a request with the idempotency-key:<key> in the header";
		// "code for case-insensitive HTTP headers".
		KeyHeader:    KeyHeader,
		MaxKeyLength: adyenMaxKeyLength,
		// "Fall back to non-idempotent processing by not submitting the
		// idempotency-key HTTP header": a request without one runs.
		RequireKey: false,
		Retention:  adyenRetention,
		// Chosen: "If the Adyen payments platform already processed the
		// request, the response to the first attempt will be returned" —
		// whatever it was, so a 5xx is replayed too.
		Store5xx: true,
		// Chosen, with the same sentence: the page compares nothing but the
		// key, so a changed payload gets the first attempt's response.
		ReplayMismatch: true,
		// "To verify that a request was processed idempotently, check the
		// idempotency-key HTTP header returned in the response."
		echoKey: true,
		// Chosen: the page does not say what a key over 64 characters gets;
		// the project's problem document is kept rather than an invented
		// Adyen error code.
		invalidKey: func(w http.ResponseWriter, err error) {
			WriteProblem(w, http.StatusBadRequest, ProblemInvalidKey, "Invalid Idempotency-Key", err.Error(), 0)
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, err error) {
			WriteProblem(w, http.StatusBadRequest, ProblemMissingKey, "Idempotency-Key required", err.Error(), 0)
		},
		// "If you submit a duplicate request before the first request has
		// completed, the API returns an HTTP 422 – Unprocessable Entity or
		// HTTP 409 - Conflict status with the error code 704: "request
		// already processed or in progress"", with "an HTTP header
		// transient-error with the value true". Chosen: 422 of the two, the
		// one a client that waits for 409 would mishandle; errorType
		// "validation", as in an answer Adyen sent that VTEX quotes in its
		// known issue 884154 (help.vtex.com, "adyen-3ds2-double-request-
		// generates-payment-authorization-denial"), as no Adyen page names
		// it.
		inProgress: adyenInProgress,
		// Reached only for a reservation (never for a completed key, see
		// ReplayMismatch): the first request may still run.
		keyReused: func(w http.ResponseWriter) { adyenInProgress(w, 0) },
		// "In the unlikely event that this data store should become
		// unavailable, the API returns an HTTP 503 – Service Unavailable
		// status with the error code 703: "required resource temporarily
		// unavailable". The system marks the request as a transient error."
		// Chosen: errorType "internal" (no page gives it).
		storeUnavailable: func(w http.ResponseWriter) {
			w.Header().Set(adyenTransientHeader, "true")
			writeJSONError(w, http.StatusServiceUnavailable, adyenError{
				Status: http.StatusServiceUnavailable, ErrorCode: "703",
				Message: "required resource temporarily unavailable", ErrorType: "internal",
			})
		},
		// No replay marker is documented beyond the echoed key.
		replayed: noReplayMarker,
	}
}

// adyenInProgress answers a duplicate of a request still running: 422,
// error code 704, transient-error: true (see adyenDialect).
func adyenInProgress(w http.ResponseWriter, _ time.Duration) {
	w.Header().Set(adyenTransientHeader, "true")
	writeJSONError(w, http.StatusUnprocessableEntity, adyenError{
		Status: http.StatusUnprocessableEntity, ErrorCode: "704",
		Message: "request already processed or in progress", ErrorType: "validation",
	})
}

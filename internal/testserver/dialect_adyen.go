package testserver

import (
	"net/http"
	"strings"
	"time"
)

// Adyen, from https://docs.adyen.com/development-resources/api-idempotency
// (the "API idempotency" page) unless a rule names another page, and from
// Adyen's published OpenAPI document of the Checkout API
// (https://github.com/Adyen/adyen-openapi, json/CheckoutService-v71.json,
// rendered as https://docs.adyen.com/api-explorer/Checkout/71/post/payments).
// What no page states is marked "chosen" and is never kinder to the client
// than Adyen would be.
//
// Not confirmed, left out:
//   - pspReference in error documents ("The PSP reference of the
//     payment"): these answers make no payment;
//   - errorCode for the API's own errors (a bad body, an unknown path, a
//     wrong method, a too long key): the field is optional ("Returns the
//     Adyen code that is mapped to the error message", no required mark,
//     https://docs.adyen.com/development-resources/serviceexception) and no
//     page maps these cases to a code;
//   - the key echo on answers other than 2xx and 422: the OpenAPI document
//     lists the Idempotency-Key response header on those only;
//   - a replay marker: the page documents none beyond the echoed key;
//   - the test triggers of additionalData.RequestedTestErrorResponseCode
//     (NO_CONNECTION_AVAILABLE, IOEXCEPTION_RECEIVED): this API is not
//     Adyen's /payments and takes no additionalData.
const (
	// "The <key> is a unique identifier for the message with a maximum of
	// 64 characters."
	adyenMaxKeyLength = 64
	// The page has said "Idempotency keys are valid for a minimum period of
	// 7 days after first submission" (its legacy instructions) and now says
	// "a minimum period of 31 days". Chosen: the shorter floor, which
	// dialect.Adyen also keeps, so the simulator never remembers a key
	// longer than a client may rely on.
	adyenRetention = 7 * 24 * time.Hour
	// adyenTransientHeader marks an answer that may be sent again with the
	// same key: "the header Transient-Error: true is returned in the
	// response. A subsequent request using the same idempotency key will be
	// processed as if it was the first request." (NO_CONNECTION_AVAILABLE in
	// CheckoutService-v71.json).
	adyenTransientHeader = "Transient-Error"
)

// adyenError is Adyen's error document: "status" ("Returns the HTTP
// response status code"), "errorCode", "message" ("a short explanation of
// the issue") and "errorType", one of "internal", "validation",
// "security", "configuration"
// (https://docs.adyen.com/development-resources/serviceexception; the
// ServiceError schema of CheckoutService-v71.json).
type adyenError struct {
	Status    int    `json:"status"`
	ErrorCode string `json:"errorCode,omitempty"`
	Message   string `json:"message"`
	ErrorType string `json:"errorType"`
}

func adyenDialect() Dialect {
	return Dialect{
		Name: "adyen",
		// "send a request with the idempotency-key:<key> in the header";
		// "Make sure that you code for case-insensitive HTTP headers."
		KeyHeader:    KeyHeader,
		MaxKeyLength: adyenMaxKeyLength,
		// The Idempotency-Key parameter is "required": false
		// (CheckoutService-v71.json): a request without one runs.
		RequireKey: false,
		Retention:  adyenRetention,
		// An error that is not transient "is stored as the final result for
		// the idempotency key. Subsequent messages with the same idempotency
		// key not be processed beyond returning the stored response."
		// (IOEXCEPTION_RECEIVED in CheckoutService-v71.json), and "If the
		// Adyen payments platform already processed the request, the
		// response to the first attempt will be returned": a handler's 5xx
		// is stored and replayed.
		Store5xx: true,
		// Chosen, with the same sentence: the page compares nothing but the
		// key, so a changed payload gets the first attempt's response.
		ReplayMismatch: true,
		// "To verify that a request was processed idempotently, check the
		// idempotency-key HTTP header returned in the response."; the
		// header, "The idempotency key used for processing the request.
		// Present if the key was provided in the request.", is listed on the
		// 2xx and 422 answers of every keyed call (CheckoutService-v71.json).
		echoKey: true,
		echoOn: func(status int) bool {
			return status/100 == 2 || status == http.StatusUnprocessableEntity
		},
		// Chosen: no page says what a key over 64 characters gets; 400 is
		// "Problem reading or understanding request"
		// (https://docs.adyen.com/development-resources/response-handling),
		// errorType validation, no errorCode (see adyenProblem).
		invalidKey: func(w http.ResponseWriter, err error) {
			writeJSONError(w, http.StatusBadRequest, adyenError{
				Status: http.StatusBadRequest, Message: "Invalid Idempotency-Key: " + err.Error(), ErrorType: "validation",
			})
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, err error) {
			writeJSONError(w, http.StatusBadRequest, adyenError{
				Status: http.StatusBadRequest, Message: err.Error(), ErrorType: "validation",
			})
		},
		inProgress: adyenInProgress,
		// Reached only for a reservation (never for a completed key, see
		// ReplayMismatch): the first request may still run.
		keyReused: func(w http.ResponseWriter) { adyenInProgress(w, 0) },
		// "In the unlikely event that this data store should become
		// unavailable, the API returns an HTTP 503 – Service Unavailable
		// status with the error code 703: "required resource temporarily
		// unavailable". The system marks the request as a transient error."
		// errorType internal: "internal" is the type of Adyen's own failures
		// (serviceexception); chosen, as no page gives it for 703.
		storeUnavailable: func(w http.ResponseWriter) {
			w.Header().Set(adyenTransientHeader, "true")
			writeJSONError(w, http.StatusServiceUnavailable, adyenError{
				Status: http.StatusServiceUnavailable, ErrorCode: "703",
				Message: "required resource temporarily unavailable", ErrorType: "internal",
			})
		},
		// No replay marker is documented beyond the echoed key.
		replayed:      noReplayMarker,
		problemAs:     adyenProblem,
		problemHeader: adyenProblemHeader,
	}
}

// adyenInProgress answers a duplicate of a request still running. "If you
// submit a duplicate request before the first request has completed, the
// API returns an HTTP 422 – Unprocessable Entity or HTTP 409 - Conflict
// status with the error code 704: "request already processed or in
// progress"", with "an HTTP header transient-error with the value true"
// (the page's error handling);
// https://docs.adyen.com/development-resources/response-handling: "409
// Conflict — Resource is locked — A conflict occurred, because the request
// is already processed or in progress ... You can retry the request if the
// API returns a transient error header with value true." Chosen: 422 of
// the two, the one a client that waits for 409 would mishandle (VTEX's
// known issue 884154, help.vtex.com "adyen-3ds2-double-request-generates-
// payment-authorization-denial", quotes a 409 Adyen sent:
// {"status":409,"errorCode":"704","message":"request already processed or
// in progress","errorType":"validation"}, whence errorType validation).
func adyenInProgress(w http.ResponseWriter, _ time.Duration) {
	w.Header().Set(adyenTransientHeader, "true")
	writeJSONError(w, http.StatusUnprocessableEntity, adyenError{
		Status: http.StatusUnprocessableEntity, ErrorCode: "704",
		Message: "request already processed or in progress", ErrorType: "validation",
	})
}

// adyenProblem is the Adyen error document of one of the reference API's
// problems: errorType "security" for 401 and 403 (the examples of
// CheckoutService-v71.json: 401 "HTTP Status Response - Unauthorized",
// 403 "Invalid Merchant Account", both security), "internal" for a 5xx,
// "validation" for any other 4xx (the 400 and 422 examples); the message
// is the problem's detail; no errorCode (none is documented for these
// cases, and the field is optional).
func adyenProblem(status int, p Problem) any {
	e := adyenError{Status: status, Message: p.Detail, ErrorType: "validation"}
	if e.Message == "" {
		e.Message = p.Title
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.ErrorType = "security"
	case status >= 500:
		e.ErrorType = "internal"
	}
	return e
}

// adyenProblemHeader marks as transient an answer given before anything
// ran (an injected fault): a retry with the same key "will be processed
// as if it was the first request", which is what Transient-Error: true
// says (adyenTransientHeader). A handler's own 5xx is not marked: it is
// stored, as Adyen stores an error that is not transient.
func adyenProblemHeader(h http.Header, _ int, p Problem) {
	if strings.HasSuffix(p.Type, "/"+ProblemInjectedFault) {
		h.Set(adyenTransientHeader, "true")
	}
}

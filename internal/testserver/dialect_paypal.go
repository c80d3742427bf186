package testserver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/idemkit/idem/server"
)

// PayPal REST APIs, from the published documentation. The create-order
// call of Orders v2 is the one closest to this server's POST /v1/payments.
// Every rule cites its page; what no page states is marked "chosen" and is
// never kinder to the client than PayPal would be. Left out: any replay
// header (none is documented).
const (
	// https://developer.paypal.com/api/orders/v2/orders-create:
	// PayPal-Request-Id "1 <= length <= 108".
	paypalMaxKeyLength = 108
	// https://developer.paypal.com/api/orders/v2/orders-create: "The
	// server stores keys for 6 hours."
	paypalRetention = 6 * time.Hour
	// paypalKeyHeader is the idempotency header of PayPal's REST POST calls
	// (https://developer.paypal.com/api/rest/reference/idempotency/).
	paypalKeyHeader = "PayPal-Request-Id"
)

// paypalError is PayPal's error document: name, message and debug_id,
// with details for client errors, each naming its field, location and
// issue (https://developer.paypal.com/sdk/payment/v2/definitions/error).
type paypalError struct {
	Name    string         `json:"name"`
	Message string         `json:"message"`
	DebugID string         `json:"debug_id"`
	Details []paypalDetail `json:"details,omitempty"`
}

type paypalDetail struct {
	Field       string `json:"field,omitempty"`
	Location    string `json:"location,omitempty"`
	Issue       string `json:"issue"`
	Description string `json:"description,omitempty"`
}

// paypalDebugID returns a fresh correlation id; PayPal documents it only
// as "The PayPal internal ID. Used for correlation purposes."
func paypalDebugID() string {
	b := make([]byte, 7)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)[:13]
}

// paypalHeaderIssue is one detail about the PayPal-Request-Id header;
// "header" is a documented location
// (https://developer.paypal.com/api/invoicing/v2/definitions/error).
func paypalHeaderIssue(issue, description string) []paypalDetail {
	return []paypalDetail{{Field: paypalKeyHeader, Location: "header", Issue: issue, Description: description}}
}

func paypalDialect() Dialect {
	return Dialect{
		Name: "paypal",
		// https://developer.paypal.com/api/rest/reference/idempotency/: "To
		// enforce idempotency on REST API POST calls, use the
		// PayPal-Request-Id request header".
		KeyHeader:    paypalKeyHeader,
		MaxKeyLength: paypalMaxKeyLength,
		// https://developer.paypal.com/api/rest/reference/idempotency/:
		// "when you omit the PayPal-Request-Id header from a request, PayPal
		// duplicates the request" — it runs, unguarded.
		RequireKey: false,
		Retention:  paypalRetention,
		// https://developer.paypal.com/api/rest/reference/idempotency/: "You
		// can retry idempotent calls that fail with network timeouts or
		// HTTP 5xx status codes for as long as the server stores the ID":
		// a 5xx is not the key's final answer.
		Store5xx: false,
		// https://developer.paypal.com/api/rest/reference/idempotency/: "when
		// you include a previously specified PayPal-Request-Id header in a
		// request, PayPal returns the latest status of the previous request
		// that used that same header" — for the header alone; no page
		// documents comparing payloads, so a changed body gets the first
		// request's answer, silently.
		ReplayMismatch: true,
		// INVALID_REQUEST is PayPal's 400 name
		// (https://developer.paypal.com/api/rest/responses/), and
		// INVALID_STRING_LENGTH its issue for a value "either too short or
		// too long" (https://developer.paypal.com/api/payments/v2/errors/invalid_string_length).
		invalidKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, paypalError{
				Name:    "INVALID_REQUEST",
				Message: "Request is not well-formed, syntactically incorrect, or violates schema.",
				DebugID: paypalDebugID(),
				Details: paypalHeaderIssue("INVALID_STRING_LENGTH", "The value of a field is either too short or too long."),
			})
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, paypalError{
				Name:    "INVALID_REQUEST",
				Message: "Request is not well-formed, syntactically incorrect, or violates schema.",
				DebugID: paypalDebugID(),
			})
		},
		inProgress: paypalInProgress,
		// Reached only for a reservation (never for a completed key, see
		// ReplayMismatch): the first request may still run, so the answer
		// is the in-progress one.
		keyReused: func(w http.ResponseWriter) { paypalInProgress(w, 0) },
		// Chosen: no page covers the store being down; the project's 503
		// problem says the request did not run.
		storeUnavailable: server.WriteStoreUnavailable,
		// https://developer.paypal.com/api/rest/responses/: "201 Created — A
		// POST method successfully created a resource. If the resource was
		// already created by a previous execution of the same method, for
		// example, the server returns the HTTP 200 OK status code."
		replayed: func(_ http.Header, status int) int {
			if status == http.StatusCreated {
				return http.StatusOK
			}
			return status
		},
	}
}

// paypalInProgress answers a duplicate of a request still running.
// https://developer.paypal.com/api/rest/reference/idempotency/: "When you
// send two simultaneous API requests with same PayPal-Request-Id header,
// PayPal processes the first request and might fail the second request."
// Chosen, as no page says how it fails: a 422 UNPROCESSABLE_ENTITY
// (https://developer.paypal.com/sdk/vault/v2/definitions/error_422) with
// PAYPAL_REQUEST_ID_PREVIOUSLY_USED, PayPal's documented issue for a
// request id "already been used for another request"
// (https://developer.paypal.com/api/payment-tokens/v3/errors/paypal_request_id_previously_used);
// no Retry-After, none is documented.
func paypalInProgress(w http.ResponseWriter, _ time.Duration) {
	writeJSONError(w, http.StatusUnprocessableEntity, paypalError{
		Name:    "UNPROCESSABLE_ENTITY",
		Message: "The requested action could not be performed, semantically incorrect, or failed business validation.",
		DebugID: paypalDebugID(),
		Details: paypalHeaderIssue("PAYPAL_REQUEST_ID_PREVIOUSLY_USED", "The PayPal-Request-ID has already been used for another request."),
	})
}

package testserver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// PayPal REST APIs, from the published documentation. The create-order
// call of Orders v2 is the one closest to this server's POST /v1/payments.
// The reference pages of the REST APIs are rendered from PayPal's OpenAPI
// documents (https://github.com/paypal/paypal-rest-api-specifications,
// openapi/checkout_orders_v2.json), where the limits, statuses and error
// shapes below were read. Every rule cites its page; what no page states is
// marked "chosen" and is never kinder to the client than PayPal would be.
//
// Not confirmed, left out:
//   - a replay header: the idempotency page documents none, only that a
//     repeat returns "the latest status of the previous request";
//   - the PayPal-Debug-Id response header: integrations log it, but no
//     PayPal page read here documents it (debug_id in the body is);
//   - details[].location and details[].field for the PayPal-Request-Id
//     header: "The location of the field that caused the error. Value is
//     body, path, or query." (error_location of every OpenAPI document),
//     and field is "the field's JSON pointer value" for a body field, so
//     no documented value names a header;
//   - Prefer: return=minimal|representation: this API's payment is not an
//     order, and its answer is always the whole resource (what
//     return=representation asks for);
//   - any status for two simultaneous requests with one PayPal-Request-Id
//     beyond "might fail the second request" (see paypalInProgress).
const (
	// https://developer.paypal.com/api/orders/v2/orders-create:
	// PayPal-Request-Id "1 <= length <= 108".
	paypalMaxKeyLength = 108
	// https://developer.paypal.com/api/orders/v2/orders-create: "The
	// server stores keys for 6 hours. The API callers can request the times
	// to up to 72 hours by speaking to their Account Manager."
	paypalRetention = 6 * time.Hour
	// paypalKeyHeader is the idempotency header of PayPal's REST POST calls
	// (https://developer.paypal.com/api/rest/reference/idempotency/).
	paypalKeyHeader = "PayPal-Request-Id"
	// paypalErrorLinkBase is where an error's information_link points, as
	// in the example of error_500 in checkout_orders_v2.json:
	// {"href": "https://developer.paypal.com/api/orders/v2/#error-INTERNAL_SERVER_ERROR",
	// "rel": "information_link"}.
	paypalErrorLinkBase = "https://developer.paypal.com/api/orders/v2/#error-"
)

// paypalError is PayPal's error document: "name" ("The human-readable,
// unique name of the error"), "message", "debug_id" ("The PayPal internal
// ID. Used for correlation purposes"), "details" ("Required for
// client-side 4XX errors"), each with a required "issue" ("The unique,
// fine-grained application-level error code") and a "description", and
// "links" ("An array of request-related HATEOAS links") — error_400,
// error_422 and error_500 of checkout_orders_v2.json, rendered as
// https://developer.paypal.com/api/orders/v2/.
type paypalError struct {
	Name    string         `json:"name"`
	Message string         `json:"message"`
	DebugID string         `json:"debug_id"`
	Details []paypalDetail `json:"details,omitempty"`
	Links   []paypalLink   `json:"links"`
}

type paypalDetail struct {
	Issue       string `json:"issue"`
	Description string `json:"description,omitempty"`
}

// paypalLink is one HATEOAS link of an error: href and rel are required
// (error_link_description of checkout_orders_v2.json); the example gives
// no method, so none is sent.
type paypalLink struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

// paypalStatusName is the name and message of PayPal's error for each
// status: https://developer.paypal.com/api/rest/responses/ ("400 Bad
// Request INVALID_REQUEST. Request is not well-formed, syntactically
// incorrect, or violates schema.", "401 Unauthorized
// AUTHENTICATION_FAILURE", "403 Forbidden NOT_AUTHORIZED", "404 Not Found
// RESOURCE_NOT_FOUND", "405 Method Not Allowed METHOD_NOT_SUPPORTED",
// "406 Not Acceptable MEDIA_TYPE_NOT_ACCEPTABLE", "415 Unsupported Media
// Type UNSUPPORTED_MEDIA_TYPE", "422 Unprocessable Entity
// UNPROCESSABLE_ENTITY", "429 ... RATE_LIMIT_REACHED"), with the messages
// of error_401 … error_503 in checkout_orders_v2.json (error_409:
// RESOURCE_CONFLICT, "The server has detected a conflict while processing
// this request."; error_500: INTERNAL_SERVER_ERROR, "An internal server
// error occurred."; error_503: SERVICE_UNAVAILABLE, "Service
// Unavailable.").
var paypalStatusName = map[int][2]string{
	http.StatusBadRequest:           {"INVALID_REQUEST", "Request is not well-formed, syntactically incorrect, or violates schema."},
	http.StatusUnauthorized:         {"AUTHENTICATION_FAILURE", "Authentication failed due to missing authorization header, or invalid authentication credentials."},
	http.StatusForbidden:            {"NOT_AUTHORIZED", "Authorization failed due to insufficient permissions."},
	http.StatusNotFound:             {"RESOURCE_NOT_FOUND", "The specified resource does not exist."},
	http.StatusMethodNotAllowed:     {"METHOD_NOT_SUPPORTED", "The server does not implement the requested HTTP method."},
	http.StatusNotAcceptable:        {"MEDIA_TYPE_NOT_ACCEPTABLE", "The server does not implement the media type that would be acceptable to the client."},
	http.StatusConflict:             {"RESOURCE_CONFLICT", "The server has detected a conflict while processing this request."},
	http.StatusUnsupportedMediaType: {"UNSUPPORTED_MEDIA_TYPE", "The server does not support the request payload's media type."},
	http.StatusUnprocessableEntity:  {"UNPROCESSABLE_ENTITY", "The requested action could not be performed, semantically incorrect, or failed business validation."},
	http.StatusTooManyRequests:      {"RATE_LIMIT_REACHED", "Too many requests. Blocked due to rate limiting."},
	http.StatusInternalServerError:  {"INTERNAL_SERVER_ERROR", "An internal server error occurred."},
	http.StatusServiceUnavailable:   {"SERVICE_UNAVAILABLE", "Service Unavailable."},
}

// newPaypalError is PayPal's error for status with details, linked to the
// page of its first issue (or of its name). A status the pages do not
// name is, by choice, INVALID_REQUEST for a 4xx and INTERNAL_SERVER_ERROR
// for a 5xx, the names of the documented status of its class.
func newPaypalError(status int, details ...paypalDetail) paypalError {
	nm, ok := paypalStatusName[status]
	if !ok {
		nm = paypalStatusName[http.StatusBadRequest]
		if status >= 500 {
			nm = paypalStatusName[http.StatusInternalServerError]
		}
	}
	anchor := nm[0]
	if len(details) > 0 {
		anchor = details[0].Issue
	}
	return paypalError{
		Name: nm[0], Message: nm[1], DebugID: paypalDebugID(), Details: details,
		Links: []paypalLink{{Href: paypalErrorLinkBase + anchor, Rel: "information_link"}},
	}
}

// paypalDebugID returns a fresh correlation id of the length of the
// documented example ("debug_id": "90957fca61718", error_500 of
// checkout_orders_v2.json).
func paypalDebugID() string {
	b := make([]byte, 7)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)[:13]
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
		// A key over 108 characters breaks the header's schema: 400
		// INVALID_REQUEST, and INVALID_STRING_LENGTH, "The value of a field
		// is either too short or too long" (the 400 issues of
		// checkout_orders_v2.json). Chosen: which of the documented issues
		// PayPal gives for the header; no page says.
		invalidKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, newPaypalError(http.StatusBadRequest,
				paypalDetail{Issue: "INVALID_STRING_LENGTH", Description: "The value of a field is either too short or too long"}))
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, newPaypalError(http.StatusBadRequest))
		},
		inProgress: paypalInProgress,
		// Reached only for a reservation (never for a completed key, see
		// ReplayMismatch): the first request may still run, so the answer
		// is the in-progress one.
		keyReused: func(w http.ResponseWriter) { paypalInProgress(w, 0) },
		// Chosen: no page covers the idempotency store being down;
		// SERVICE_UNAVAILABLE is PayPal's 503 (error_503).
		storeUnavailable: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusServiceUnavailable, newPaypalError(http.StatusServiceUnavailable))
		},
		// https://developer.paypal.com/api/orders/v2/orders-create: "A
		// successful response to an idempotent request returns the HTTP 200
		// OK status code"; https://developer.paypal.com/api/rest/responses/:
		// "201 Created — A POST method successfully created a resource. If
		// the resource was already created by a previous execution of the
		// same method, for example, the server returns the HTTP 200 OK
		// status code."
		replayed: func(_ http.Header, status int) int {
			if status == http.StatusCreated {
				return http.StatusOK
			}
			return status
		},
		problemAs: paypalProblem,
	}
}

// paypalInProgress answers a duplicate of a request still running.
// https://developer.paypal.com/api/rest/reference/idempotency/: "When you
// send two simultaneous API requests with same PayPal-Request-Id header,
// PayPal processes the first request and might fail the second request."
// Chosen, as no page says how it fails: 422 UNPROCESSABLE_ENTITY with
// PAYPAL_REQUEST_ID_PREVIOUSLY_USED, "The PayPal-Request-ID has already
// been used for another request." with the description "The requested
// action could not be performed, semantically incorrect, or failed
// business validation." (https://developer.paypal.com/api/payment-tokens/v3/errors/paypal_request_id_previously_used),
// the documented answer that proves least: dialect.PayPal leaves an intent
// unsettled on it. Not 409 PREVIOUS_REQUEST_IN_PROGRESS, which Payments v2
// documents for "A previous request on this resource" on a void or a
// refund, and which a client would retry. No Retry-After: none is
// documented.
func paypalInProgress(w http.ResponseWriter, _ time.Duration) {
	writeJSONError(w, http.StatusUnprocessableEntity, newPaypalError(http.StatusUnprocessableEntity,
		paypalDetail{Issue: "PAYPAL_REQUEST_ID_PREVIOUSLY_USED", Description: "The PayPal-Request-ID has already been used for another request."}))
}

// paypalProblem is the PayPal error document of one of the reference
// API's problems, named for its status (paypalStatusName). A 400 carries
// INVALID_PARAMETER_VALUE, "A parameter value is not valid." (the 400
// issues of checkout_orders_v2.json), as details are "Required for
// client-side 4XX errors"; other statuses carry no issue, as the pages
// name none for this API's cases.
func paypalProblem(status int, p Problem) any {
	if status != http.StatusBadRequest {
		return newPaypalError(status)
	}
	description := p.Detail
	if description == "" {
		description = p.Title
	}
	return newPaypalError(status, paypalDetail{Issue: "INVALID_PARAMETER_VALUE", Description: description})
}

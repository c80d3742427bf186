package testserver

import (
	"net/http"
	"time"

	"github.com/idemkit/idem/server"
)

// Square, from its published documentation; CreatePayment is the call
// closest to this server's POST /v1/payments. What no page states is
// marked "chosen" and is never kinder to the client than Square would be.
//
// Not confirmed, left out:
//   - a retention period: Square publishes none, as its staff say in
//     https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303,
//     so the server's own retention applies;
//   - a replay marker: a repeat "returns the response as the first
//     successful CreatePayment response", unmarked;
//   - the status of IDEMPOTENCY_KEY_REUSED and any answer to a duplicate
//     sent while the first still runs (see squareDialect);
//   - key lengths of other endpoints (Orders take 192): the simulator is
//     CreatePayment's 45.
const (
	// squareKeyField is the body member of CreatePayment that carries the
	// key: "idempotency_key ... Required", "Minimum Length: 1, Maximum
	// Length: 45", and "The number of allowed characters might be less
	// than the stated maximum, if multi-byte characters are used" — a
	// limit in bytes (https://github.com/square/square-php-sdk/blob/master/doc/models/create-payment-request.md,
	// Square's SDK reference for CreatePayment).
	squareKeyField     = "idempotency_key"
	squareMaxKeyLength = 45
)

// squareErrors is Square's error document: "Error responses include an
// errors array with an Error object for each error", each with category,
// code, detail and field (https://developer.squareup.com/docs/build-basics/handling-errors).
type squareErrors struct {
	Errors []squareError `json:"errors"`
}

type squareError struct {
	Category string `json:"category"`
	Code     string `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Field    string `json:"field,omitempty"`
}

// writeSquareError answers one Square INVALID_REQUEST_ERROR.
func writeSquareError(w http.ResponseWriter, status int, code, detail, field string) {
	writeJSONError(w, status, squareErrors{[]squareError{{
		Category: "INVALID_REQUEST_ERROR", Code: code, Detail: detail, Field: field,
	}}})
}

// Square's error codes and their statuses are those of the ErrorCode enum
// (https://developer.squareup.com/reference/square/enums/ErrorCode, as
// mirrored in https://github.com/square/square-php-sdk/blob/master/doc/models/error-code.md).
func squareDialect() Dialect {
	return Dialect{
		Name:         "square",
		KeyField:     squareKeyField,
		MaxKeyLength: squareMaxKeyLength,
		RequireKey:   true,
		// https://developer.squareup.com/reference/square/enums/ErrorCode:
		// TEMPORARY_ERROR — "You can safely retry your call using the same
		// idempotency key": a 5xx is not the key's final answer.
		Store5xx: false,
		// MISSING_REQUIRED_PARAMETER: "400 Bad Request - the request is
		// missing a required path, query, or body parameter."
		missingKey: func(w http.ResponseWriter, _ error) {
			writeSquareError(w, http.StatusBadRequest, "MISSING_REQUIRED_PARAMETER",
				"Field must be set", squareKeyField)
		},
		// VALUE_TOO_LONG / VALUE_TOO_SHORT ("the provided string value is
		// longer / shorter than the ... length allowed"), EXPECTED_STRING,
		// EXPECTED_JSON_BODY ("the request body is not a JSON object"), all
		// 400. Chosen: INVALID_VALUE for a key given twice.
		invalidKey: func(w http.ResponseWriter, err error) {
			switch server.ProblemOf(err) {
			case server.KeyTooLong:
				writeSquareError(w, http.StatusBadRequest, "VALUE_TOO_LONG", err.Error(), squareKeyField)
			case server.KeyEmpty:
				writeSquareError(w, http.StatusBadRequest, "VALUE_TOO_SHORT", err.Error(), squareKeyField)
			case server.KeyNotString:
				writeSquareError(w, http.StatusBadRequest, "EXPECTED_STRING", err.Error(), squareKeyField)
			case server.BodyNotObject, server.BodyNotUTF8:
				writeSquareError(w, http.StatusBadRequest, "EXPECTED_JSON_BODY", err.Error(), "")
			default:
				writeSquareError(w, http.StatusBadRequest, "INVALID_VALUE", err.Error(), squareKeyField)
			}
		},
		// Chosen: neither the idempotency guide nor CreatePayment documents
		// a duplicate sent while the first still runs. CONFLICT ("409
		// Conflict - a general error occurred") is the closest code; no
		// Retry-After, none is documented.
		inProgress: func(w http.ResponseWriter, _ time.Duration) {
			writeSquareError(w, http.StatusConflict, "CONFLICT",
				"A request with this idempotency_key is still being processed.", squareKeyField)
		},
		// https://developer.squareup.com/docs/working-with-apis/idempotency:
		// "If you use the same idempotency key but change the CreatePayment
		// request (for example, specify a different payment amount), you
		// get an error indicating that you used the idempotency key
		// previously"; the code is IDEMPOTENCY_KEY_REUSED, "The provided
		// idempotency key has already been used." The detail is the message
		// Square sent, as a developer quotes it: "The idempotency key can
		// only be retried with the same request data."
		// (https://developer.squareup.com/forums/t/if-i-delete-a-customer-profile-can-i-not-reuse-the-same-idempotency-key/8276).
		// Chosen: status 400, as the enum gives none and
		// INVALID_REQUEST_ERROR errors are 400s.
		keyReused: func(w http.ResponseWriter) {
			writeSquareError(w, http.StatusBadRequest, "IDEMPOTENCY_KEY_REUSED",
				"The idempotency key can only be retried with the same request data.", squareKeyField)
		},
		// Chosen: no page covers the store being down; SERVICE_UNAVAILABLE
		// is Square's 503 ("Service Unavailable - a general error
		// occurred."), in category API_ERROR, "An error occurred with the
		// Connect API itself."
		// (https://developer.squareup.com/reference/square/enums/ErrorCategory).
		storeUnavailable: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusServiceUnavailable, squareErrors{[]squareError{{
				Category: "API_ERROR", Code: "SERVICE_UNAVAILABLE",
				Detail: "The idempotency store is unavailable; nothing was executed. Retry with the same idempotency_key.",
			}}})
		},
		// https://developer.squareup.com/docs/working-with-apis/idempotency:
		// "the endpoint returns the response as the first successful
		// CreatePayment response" — the same response, with no marker.
		replayed:  noReplayMarker,
		problemAs: squareProblem,
	}
}

// squareStatusCode is Square's general error code for each status, from
// the ErrorCode enum (https://developer.squareup.com/reference/square/enums/ErrorCode):
// BAD_REQUEST "A general error occurred with the request.", UNAUTHORIZED,
// FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED, NOT_ACCEPTABLE,
// REQUEST_TIMEOUT, CONFLICT, GONE, REQUEST_ENTITY_TOO_LARGE,
// UNSUPPORTED_MEDIA_TYPE, UNPROCESSABLE_ENTITY, RATE_LIMITED,
// INTERNAL_SERVER_ERROR, NOT_IMPLEMENTED, BAD_GATEWAY,
// SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT — each "<status text> - a general
// error occurred."
var squareStatusCode = map[int]string{
	http.StatusBadRequest:            "BAD_REQUEST",
	http.StatusUnauthorized:          "UNAUTHORIZED",
	http.StatusForbidden:             "FORBIDDEN",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusMethodNotAllowed:      "METHOD_NOT_ALLOWED",
	http.StatusNotAcceptable:         "NOT_ACCEPTABLE",
	http.StatusRequestTimeout:        "REQUEST_TIMEOUT",
	http.StatusConflict:              "CONFLICT",
	http.StatusGone:                  "GONE",
	http.StatusRequestEntityTooLarge: "REQUEST_ENTITY_TOO_LARGE",
	http.StatusUnsupportedMediaType:  "UNSUPPORTED_MEDIA_TYPE",
	http.StatusUnprocessableEntity:   "UNPROCESSABLE_ENTITY",
	http.StatusTooManyRequests:       "RATE_LIMITED",
	http.StatusInternalServerError:   "INTERNAL_SERVER_ERROR",
	http.StatusNotImplemented:        "NOT_IMPLEMENTED",
	http.StatusBadGateway:            "BAD_GATEWAY",
	http.StatusServiceUnavailable:    "SERVICE_UNAVAILABLE",
	http.StatusGatewayTimeout:        "GATEWAY_TIMEOUT",
}

// squareProblem is the Square error document of one of the reference
// API's problems: the status's general code (squareStatusCode; chosen,
// BAD_REQUEST or INTERNAL_SERVER_ERROR for a status the enum does not
// name), in the category the ErrorCategory enum gives the case
// (https://developer.squareup.com/reference/square/enums/ErrorCategory):
// AUTHENTICATION_ERROR, "Most commonly, the request had a missing,
// malformed, or otherwise invalid Authorization header", for 401 and 403;
// RATE_LIMIT_ERROR for 429 ("monitor responses for 429 RATE_LIMITED
// errors"); API_ERROR, "An error occurred with the Connect API itself",
// for a 5xx; INVALID_REQUEST_ERROR, "The request was invalid", for the
// rest.
func squareProblem(status int, p Problem) any {
	code, ok := squareStatusCode[status]
	if !ok {
		code = "BAD_REQUEST"
		if status >= 500 {
			code = "INTERNAL_SERVER_ERROR"
		}
	}
	category := "INVALID_REQUEST_ERROR"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		category = "AUTHENTICATION_ERROR"
	case status == http.StatusTooManyRequests:
		category = "RATE_LIMIT_ERROR"
	case status >= 500:
		category = "API_ERROR"
	}
	detail := p.Detail
	if detail == "" {
		detail = p.Title
	}
	return squareErrors{[]squareError{{Category: category, Code: code, Detail: detail}}}
}

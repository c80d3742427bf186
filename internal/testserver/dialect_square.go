package testserver

import (
	"net/http"
	"time"

	"github.com/idemkit/idem/server"
)

// Square, from its published documentation; CreatePayment is the call
// closest to this server's POST /v1/payments. What no page states is
// marked "chosen" and is never kinder to the client than Square would be.
// Left out: a retention period (Square publishes none, as its staff say
// in https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303,
// so the server's own retention applies) and any replay marker (none is
// documented).
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
		// idempotency key has already been used." Chosen: status 400, as
		// the enum gives none and INVALID_REQUEST_ERROR errors are 400s.
		keyReused: func(w http.ResponseWriter) {
			writeSquareError(w, http.StatusBadRequest, "IDEMPOTENCY_KEY_REUSED",
				"The idempotency_key was already used for a different request.", squareKeyField)
		},
		// Chosen: no page covers the store being down; the project's 503
		// problem says the request did not run.
		storeUnavailable: server.WriteStoreUnavailable,
		// https://developer.squareup.com/docs/working-with-apis/idempotency:
		// "the endpoint returns the response as the first successful
		// CreatePayment response" — the same response, with no marker.
		replayed: noReplayMarker,
	}
}

package testserver

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Checkout.com, from its published documentation: the "Idempotency" page
// (https://www.checkout.com/docs/payments/manage-payments/idempotency, last
// updated January 7, 2026) unless a rule names another page. What no page
// states is marked "chosen" and is never kinder to the client than
// Checkout.com would be.
//
// Left out, because no Checkout.com page confirms it: a key length limit
// or format (the server takes the client dialect's 36, a V4 UUID's
// length, the one key the page recommends); what a key sent again with
// another body gets (the page names no key-reuse error); the body and any
// Retry-After of the 409 sent to a duplicate in progress; any replay
// marker; what an invalid key or an unavailable idempotency store gets.
const (
	// checkoutKeyHeader: "To perform an idempotent payment or payment
	// action request, provide a unique key in the Cko-Idempotency-Key HTTP
	// header."
	checkoutKeyHeader = "Cko-Idempotency-Key"
	// checkoutMaxKeyLength is chosen (see above): no page gives a limit.
	checkoutMaxKeyLength = 36
	// checkoutRetention: "By default, keys expire after 24 hours for both
	// the sandbox and production environments."
	checkoutRetention = 24 * time.Hour
	// checkoutRequestIDHeader is on every answer: "Cko-Request-Id ... The
	// unique identifier of the request", a response header of every
	// answer of POST /payments in Checkout.com's API reference, as its
	// published Postman collection carries it
	// (https://github.com/checkout/checkout-postman, cko_collection.json,
	// "Request a payment or payout"); Checkout.com's SDKs read it from
	// every answer (checkout-sdk-go client/client.go: CkoRequestId =
	// "cko-request-id").
	checkoutRequestIDHeader = "Cko-Request-Id"
	// checkoutRequestInvalid is the error_type of a validation error:
	// "422 Invalid data was sent", {"request_id": "0HL80RJLS76I7",
	// "error_type": "request_invalid", "error_codes":
	// ["payment_source_required"]} (the same collection).
	checkoutRequestInvalid = "request_invalid"
)

// checkoutError is Checkout.com's error document (see
// checkoutRequestInvalid); checkout-sdk-go reads the same three members
// (errors/error.go: request_id, error_type, error_codes).
type checkoutError struct {
	RequestID  string   `json:"request_id"`
	ErrorType  string   `json:"error_type"`
	ErrorCodes []string `json:"error_codes"`
}

func checkoutDialect() Dialect {
	return Dialect{
		Name:         "checkout",
		KeyHeader:    checkoutKeyHeader,
		MaxKeyLength: checkoutMaxKeyLength,
		// The API reference lists the header as "An optional idempotency
		// key for safely retrying payment requests" (the collection
		// above): a request without one runs, every time.
		RequireKey: false,
		Retention:  checkoutRetention,
		// Only 2xx is kept: "This key is cached in our system if the
		// request returns a 2xx response code"; "If the original request
		// returns a 4xx or 5xxx response code, no idempotent result is
		// saved and the payment is reattempted." So no 5xx is stored, and
		// every 4xx this API answers (400, 401, 404, 405, 409, 413, 415,
		// 422) is one the core frees the key of; the API answers no 3xx.
		Store5xx: false,
		// Chosen: "Subsequent requests with the same key will return the
		// same HTTP status code and response body as the original request,
		// providing that it was processed successfully" — the page compares
		// nothing but the key, so a changed body gets the first answer.
		ReplayMismatch: true,
		// Chosen: no page says what a bad key gets; Checkout.com's
		// validation error (422 request_invalid) names the header.
		invalidKey: func(w http.ResponseWriter, _ error) {
			writeCheckoutError(w, http.StatusUnprocessableEntity, "cko_idempotency_key_invalid")
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeCheckoutError(w, http.StatusUnprocessableEntity, "cko_idempotency_key_required")
		},
		inProgress: checkoutInProgress,
		// Reached only while the key's first request still runs (a
		// completed key replays, see ReplayMismatch): "only one request
		// will be processed", the others get the in-progress answer.
		keyReused: func(w http.ResponseWriter) { checkoutInProgress(w, 0) },
		// Chosen: no page covers the idempotency store being down. A bare
		// 503, which the Checkout client dialect cannot tell from a 5xx
		// after which the payment may have run, and so never resends.
		storeUnavailable: func(w http.ResponseWriter) { writeEmpty(w, http.StatusServiceUnavailable) },
		// "Subsequent requests with the same key will return the same HTTP
		// status code and response body": nothing marks a replay.
		replayed:     noReplayMarker,
		wrapAPI:      checkoutAPI,
		paymentDoc:   checkoutPaymentDoc,
		objectFields: checkoutObjectFields,
	}
}

// checkoutInProgress answers a duplicate of a request still running. "If
// we detect concurrent requests with the same idempotency key, only one
// request will be processed and the other requests will return a 429 Too
// many requests response"
// (https://www.checkout.com/docs/developer-resources/api/idempotency,
// August 14, 2024), now a 409: "Previously,
// the Checkout.com API returned a 429 – Too many requests HTTP response for
// duplicate idempotent requests. For this particular scenario, this has
// been replaced with the 409 – Conflict with another request being
// processed HTTP response."
// (https://support.checkout.com/hc/en-us/articles/24570669653010-Why-did-I-receive-a-409-HTTP-response-to-my-idempotent-API-request-instead-of-429).
// No page shows its body or a Retry-After ("We recommend waiting at least
// 30 seconds before you reattempt a request" is advice, not a header), so
// it has neither.
func checkoutInProgress(w http.ResponseWriter, _ time.Duration) {
	writeEmpty(w, http.StatusConflict)
}

// checkoutAPI gives every answer of the API its own Cko-Request-Id and
// turns the API's problem documents into Checkout.com's answers
// (writeCheckoutProblem). The admin API is this project's and keeps its
// own.
func checkoutAPI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/admin/") {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set(checkoutRequestIDHeader, newCheckoutRequestID())
		reshapeProblemsWith(next, writeCheckoutProblem).ServeHTTP(w, r)
	})
}

// writeCheckoutProblem answers one problem of the API as Checkout.com
// would. POST /payments documents 401 "Unauthorized" and 502 "Bad gateway"
// without a body, and "422 Invalid data was sent" with the error document
// (the API reference, as the Postman collection carries it). So: a
// validation problem (400, 422) is a 422 request_invalid; 401 and every
// 5xx go without a body; a 409 (the key's hold ended before the payment
// committed) is the in-progress answer. Chosen for what no page shows
// (404, 405, 413, 415): the status, without a body for 404 and 405, with
// the error document for the two that refuse the body.
func writeCheckoutProblem(w http.ResponseWriter, status int, p Problem) {
	switch {
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		writeCheckoutError(w, http.StatusUnprocessableEntity, checkoutErrorCode(p))
	case status == http.StatusConflict:
		checkoutInProgress(w, 0)
	case status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType:
		writeCheckoutError(w, status, checkoutErrorCode(p))
	default:
		writeEmpty(w, status)
	}
}

// checkoutErrorCode names what a validation problem found wrong, in the
// form of Checkout.com's error codes, "<field>_required" and
// "<field>_invalid" (payment_source_required in the API reference;
// amount_required in checkout-sdk-go's apm/klarna tests). amount, currency,
// reference and source are fields of Checkout.com's payment request
// (https://www.checkout.com/docs/payments/accept-payments/request-a-card-payment);
// a problem about none of them is chosen to be request_body_invalid.
func checkoutErrorCode(p Problem) string {
	field, rest, _ := strings.Cut(p.Detail, " ")
	switch field {
	case "amount", "currency", "reference", "source":
		if strings.HasPrefix(rest, "is required") {
			return field + "_required"
		}
		return field + "_invalid"
	}
	return "request_body_invalid"
}

// writeCheckoutError answers status with Checkout.com's error document,
// its request_id the answer's Cko-Request-Id.
func writeCheckoutError(w http.ResponseWriter, status int, codes ...string) {
	writeJSONError(w, status, checkoutError{
		RequestID: w.Header().Get(checkoutRequestIDHeader), ErrorType: checkoutRequestInvalid, ErrorCodes: codes,
	})
}

// writeEmpty answers status with no body.
func writeEmpty(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Del("Content-Type")
	h.Set("Content-Length", "0")
	w.WriteHeader(status)
}

// newCheckoutRequestID returns a random (version 4) UUID, the form of the
// Cko-Request-Id values Checkout.com's SDK tests carry
// ("5fa7ee8c-f82d-4440-a6dc-e8c859b03235", checkout-sdk-node).
func newCheckoutRequestID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

package dialect

import (
	"encoding/json"
	"strings"
	"time"
)

// Pages the PayPal rules come from. The REST reference pages are rendered
// from PayPal's published OpenAPI documents
// (https://github.com/paypal/paypal-rest-api-specifications), which is where
// the per-operation limits and error issues below were read.
const (
	paypalIdempotencyURL   = "https://developer.paypal.com/api/rest/reference/idempotency/"
	paypalResponsesURL     = "https://developer.paypal.com/api/rest/responses/"
	paypalOrdersCreateURL  = "https://developer.paypal.com/api/orders/v2/orders-create"
	paypalOrdersURL        = "https://developer.paypal.com/docs/api/orders/v2/"
	paypalPaymentsURL      = "https://developer.paypal.com/docs/api/payments/v2/"
	paypalSpecURL          = "https://github.com/paypal/paypal-rest-api-specifications"
	paypalOrderStatusURL   = "https://developer.paypal.com/api/orders/v2/definitions/order_status"
	paypalCaptureStatusURL = "https://developer.paypal.com/sdk/orders/v2/definitions/capture_status"
	paypalAuthStatusURL    = "https://developer.paypal.com/api/payments/v2/definitions/authorization_status"
	paypalRateLimitURL     = "https://developer.paypal.com/api/rest/reference/rate-limiting"
	paypalAuthHeadersURL   = "https://developer.paypal.com/docs/api/auth-headers/"
)

// PayPalRetention is how long the Orders v2 API keeps a PayPal-Request-Id:
// "The server stores keys for 6 hours"
// (https://developer.paypal.com/api/orders/v2/orders-create; the same for
// authorize and capture). Payments v2 keeps them 45 days and Payouts 30 days
// (https://github.com/paypal/paypal-rest-api-specifications); the dialect
// takes the shortest for the payment APIs, so an intent is never resent after
// its key may be gone.
const PayPalRetention = 6 * time.Hour

// PayPal is the dialect of the PayPal REST APIs (Orders v2, Payments v2): the
// key travels in PayPal-Request-Id, up to 108 characters, kept 6 hours; a
// repeated key returns "the latest status of the previous request" rather
// than a saved answer, so there is no replay marker.
func PayPal() Dialect {
	return Dialect{
		Name: "paypal",
		// "use the PayPal-Request-Id request header"
		// (https://developer.paypal.com/api/rest/reference/idempotency/)
		KeyHeader: "PayPal-Request-Id",
		// Orders v2 create, authorize and capture: "1 <= length <= 108"
		// (https://developer.paypal.com/api/orders/v2/orders-create).
		// Payments v2 accepts up to 10000; the dialect takes the smaller.
		MaxKeyLength: 108,
		Retention:    PayPalRetention,
		// PayPal documents no replay header: a repeat returns the request's
		// current state
		// (https://developer.paypal.com/api/rest/reference/idempotency/).
		ReplayHeader:    "",
		Classify:        paypalClassify,
		OperationStatus: paypalOperationStatus,
		// "To make a REST API call, you must include request headers
		// including the Authorization header with an OAuth 2.0 access
		// token." (https://developer.paypal.com/docs/api/auth-headers/):
		// secret by default anyway, listed as the page documents it.
		// PayPal-Auth-Assertion, which names the merchant a platform calls
		// for, is left out: "PayPal recommends using an unsigned JWT,
		// because the information passed with the JWT is not sensitive"
		// (https://developer.paypal.com/api/make-api-requests).
		SecretHeaders: []string{"Authorization"},
		Docs: []string{paypalIdempotencyURL, paypalResponsesURL, paypalOrdersCreateURL,
			paypalOrdersURL, paypalPaymentsURL, paypalSpecURL,
			paypalOrderStatusURL, paypalCaptureStatusURL, paypalAuthStatusURL, paypalRateLimitURL,
			paypalAuthHeadersURL},
	}
}

// paypalIssues returns the name and the details[].issue values of a PayPal
// error body: {"name", "message", "details":[{"issue", ...}]}
// (https://developer.paypal.com/api/rest/responses/).
func paypalIssues(body []byte) (name string, issues []string) {
	var doc struct {
		Name    string `json:"name"`
		Details []struct {
			Issue string `json:"issue"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return "", nil
	}
	for _, d := range doc.Details {
		issues = append(issues, d.Issue)
	}
	return doc.Name, issues
}

// paypalClassify judges an answer by PayPal's documented issues and falls
// back to DraftClassify. The rules that matter are the two that say "still in
// progress": without them a 422 would be Refused.
func paypalClassify(a Answer) Verdict {
	if a.Status < 400 {
		return DraftClassify(a)
	}
	name, issues := paypalIssues(a.Body)
	for _, issue := range append(issues, name) {
		switch issue {
		// 409 PREVIOUS_REQUEST_IN_PROGRESS on a void or a refund: "A previous
		// request on this resource is currently in progress. Please wait for
		// sometime and try again."
		// (https://developer.paypal.com/docs/api/payments/v2/)
		case "PREVIOUS_REQUEST_IN_PROGRESS":
			return InProgress
		// 422 ORDER_COMPLETION_IN_PROGRESS on an order capture: "PayPal is
		// still in the process of capturing the order on your behalf ...
		// Please try your request again."
		// (https://developer.paypal.com/docs/api/orders/v2/)
		case "ORDER_COMPLETION_IN_PROGRESS":
			return InProgress
		// PAYPAL_REQUEST_ID_PREVIOUSLY_USED ("has already been used for
		// another request") and DUPLICATE_REQUEST_ID: KeyReused. "When you
		// send two simultaneous API requests with same PayPal-Request-Id
		// header, PayPal processes the first request and might fail the
		// second request"
		// (https://developer.paypal.com/api/rest/reference/idempotency/)
		// without naming the error, so after an attempt that may have
		// taken effect our own first attempt may be the one holding the
		// key: the client then leaves the intent unsettled (a KeyReused
		// verdict is final only for an intent nothing was sent of before).
		case "PAYPAL_REQUEST_ID_PREVIOUSLY_USED", "DUPLICATE_REQUEST_ID":
			return KeyReused
		}
	}
	// The rest falls back to Draft: "retry idempotent calls that fail with
	// network timeouts or HTTP 5xx status codes"
	// (https://developer.paypal.com/api/rest/reference/idempotency/) is
	// Draft's RetryMaybeExecuted; 429 RATE_LIMIT_REACHED, "Blocked due to
	// rate limiting" (https://developer.paypal.com/api/rest/reference/rate-limiting),
	// is Draft's RetryNotExecuted; 400 and other 422s (PAYPAL_REQUEST_ID_REQUIRED,
	// INSTRUMENT_DECLINED, ORDER_ALREADY_CAPTURED) are Refused, since none of
	// them says an earlier attempt did not run; any other 409
	// (RESOURCE_CONFLICT) is Draft's InProgress.
	return DraftClassify(a)
}

// paypalOperationStatus reads a PayPal order, capture or authorization. An
// order's COMPLETED "can indicate a payment was authorized, an authorized
// payment was captured, or a payment was declined"
// (https://developer.paypal.com/api/orders/v2/definitions/order_status), so a
// completed order is judged by the captures and authorizations in its
// purchase units.
func paypalOperationStatus(body []byte) OperationStatus {
	var doc struct {
		Status        string `json:"status"`
		PurchaseUnits []struct {
			Payments struct {
				Captures       []paypalStatus `json:"captures"`
				Authorizations []paypalStatus `json:"authorizations"`
			} `json:"payments"`
		} `json:"purchase_units"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Status == "" {
		return DraftOperationStatus(body)
	}
	if strings.EqualFold(doc.Status, "COMPLETED") && len(doc.PurchaseUnits) > 0 {
		var words []string
		for _, u := range doc.PurchaseUnits {
			for _, c := range u.Payments.Captures {
				words = append(words, c.Status)
			}
			for _, c := range u.Payments.Authorizations {
				words = append(words, c.Status)
			}
		}
		if len(words) > 0 {
			return paypalWorst(words)
		}
	}
	return paypalWord(doc.Status)
}

// paypalStatus is a capture or authorization inside an order.
type paypalStatus struct {
	Status string `json:"status"`
}

// paypalWord reads one PayPal status word of an order, a capture or an
// authorization; a word none of the pages below lists is OperationUnknown.
func paypalWord(w string) OperationStatus {
	switch strings.ToUpper(strings.TrimSpace(w)) {
	// Order VOIDED: "All purchase units in the order are voided"
	// (https://developer.paypal.com/api/orders/v2/definitions/order_status);
	// authorization VOIDED: "No more captured payments can be made"
	// (https://developer.paypal.com/api/payments/v2/definitions/authorization_status).
	// Nothing was taken.
	case "VOIDED":
		return OperationCanceled
	// Authorization DENIED
	// (https://developer.paypal.com/api/payments/v2/definitions/authorization_status);
	// capture DECLINED and FAILED
	// (https://developer.paypal.com/sdk/orders/v2/definitions/capture_status).
	case "DENIED", "DECLINED", "FAILED":
		return OperationFailed
	// Capture and authorization PENDING. An order CREATED, SAVED, APPROVED
	// or PAYER_ACTION_REQUIRED is not COMPLETED yet: it waits for the payer
	// or for a capture (order_status above).
	case "PENDING", "CREATED", "SAVED", "APPROVED", "PAYER_ACTION_REQUIRED":
		return OperationPending
	// Capture COMPLETED, REFUNDED and PARTIALLY_REFUNDED (money moved);
	// authorization CAPTURED and PARTIALLY_CAPTURED; an order COMPLETED
	// without payments to fold.
	case "COMPLETED", "REFUNDED", "PARTIALLY_REFUNDED", "CAPTURED", "PARTIALLY_CAPTURED":
		return OperationSucceeded
	}
	return OperationUnknown
}

// paypalWorst folds the payments of one order: any pending one leaves the
// order pending; any that took money makes it a success, so an order is never
// recorded failed when part of it was paid; any word not documented leaves
// the order unknown, since it may have taken money; otherwise a failure beats
// a cancellation.
func paypalWorst(words []string) OperationStatus {
	got := make(map[OperationStatus]bool)
	for _, w := range words {
		got[paypalWord(w)] = true
	}
	switch {
	case got[OperationPending]:
		return OperationPending
	case got[OperationSucceeded]:
		return OperationSucceeded
	case got[OperationUnknown]:
		return OperationUnknown
	case got[OperationFailed]:
		return OperationFailed
	}
	return OperationCanceled
}

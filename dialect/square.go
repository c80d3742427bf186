package dialect

import (
	"encoding/json"
	"strings"
)

// Pages the Square rules come from.
const (
	squareIdempotencyURL   = "https://developer.squareup.com/docs/build-basics/common-api-patterns/idempotency"
	squareErrorsURL        = "https://developer.squareup.com/docs/build-basics/general-considerations/handling-errors"
	squareErrorCodeURL     = "https://developer.squareup.com/reference/square/enums/ErrorCode"
	squareCreatePaymentURL = "https://developer.squareup.com/reference/square/payments-api/create-payment"
	squarePaymentURL       = "https://developer.squareup.com/reference/square/objects/Payment"
	squareRefundURL        = "https://developer.squareup.com/reference/square/objects/PaymentRefund"
	squareRetentionURL     = "https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303"
	squareRESTURL          = "https://developer.squareup.com/docs/build-basics/using-rest-api"
)

// Square is the dialect of the Square APIs: the key travels in the JSON
// body's idempotency_key member, up to 45 characters for CreatePayment and
// RefundPayment; Square publishes no retention, so the client's own applies;
// a repeat of the same request returns the first response, with no replay
// marker.
func Square() Dialect {
	return Dialect{
		Name: "square",
		// CreatePaymentRequest.idempotency_key
		// (https://developer.squareup.com/reference/square/payments-api/create-payment).
		KeyField: "idempotency_key",
		// CreatePayment: "minLength 1, maxLength 45"
		// (https://developer.squareup.com/reference/square/payments-api/create-payment);
		// RefundPayment keys "are limited to a max of 45 characters". Orders
		// take 192; the dialect takes the smaller. Keys are ASCII here, so
		// characters are bytes.
		MaxKeyLength: 45,
		// "We do not publish a retention period for CreatePayment idempotency
		// keys" (Square staff,
		// https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303).
		Retention: 0,
		// A repeat "returns the response as the first successful
		// CreatePayment response"
		// (https://developer.squareup.com/docs/build-basics/common-api-patterns/idempotency),
		// unmarked.
		ReplayHeader:    "",
		Classify:        squareClassify,
		OperationStatus: squareOperationStatus,
		// Every request carries "Authorization: Bearer {ACCESS_TOKEN}",
		// where "{ACCESS_TOKEN} is a valid Square access token"
		// (https://developer.squareup.com/docs/build-basics/using-rest-api):
		// secret by default anyway, listed as the page documents it.
		SecretHeaders: []string{"Authorization"},
		Docs: []string{squareIdempotencyURL, squareErrorsURL, squareErrorCodeURL,
			squareCreatePaymentURL, squarePaymentURL, squareRefundURL, squareRetentionURL, squareRESTURL},
	}
}

// squareErrorCode returns the code of the first error of a Square error body,
// {"errors":[{"category","code","detail","field"}]}: "If multiple errors are
// returned, the status code matches the first one"
// (https://developer.squareup.com/docs/build-basics/general-considerations/handling-errors).
func squareErrorCode(body []byte) string {
	var doc struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &doc) != nil || len(doc.Errors) == 0 {
		return ""
	}
	return doc.Errors[0].Code
}

// squareClassify judges an answer by Square's error codes and falls back to
// DraftClassify.
func squareClassify(a Answer) Verdict {
	if a.Status < 400 {
		return DraftClassify(a)
	}
	switch squareErrorCode(a.Body) {
	// TEMPORARY_ERROR: "A temporary internal error occurred. You can safely
	// retry your call using the same idempotency key."
	// (https://developer.squareup.com/reference/square/enums/ErrorCode)
	// Square does not say it did not run.
	case "TEMPORARY_ERROR":
		return RetryMaybeExecuted
	// IDEMPOTENCY_KEY_REUSED: "The provided idempotency key has already been
	// used"
	// (https://developer.squareup.com/reference/square/enums/ErrorCode), the
	// error for a changed request under a used key, a behaviour that "might
	// vary depending on the API"
	// (https://developer.squareup.com/docs/build-basics/common-api-patterns/idempotency).
	// Square documents no answer for a duplicate sent while the first is
	// still running, so after an attempt that may have taken effect this
	// could be our own first attempt holding the key: the client then
	// leaves the intent unsettled (KeyReused is final only for an intent
	// nothing was sent of before).
	case "IDEMPOTENCY_KEY_REUSED":
		return KeyReused
	}
	// The rest is Draft: 429 RATE_LIMITED is RetryNotExecuted, a 5xx
	// (INTERNAL_SERVER_ERROR, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT)
	// RetryMaybeExecuted, a 409 CONFLICT InProgress, and other 4xx (card
	// declines included) Refused.
	return DraftClassify(a)
}

// squareOperationStatus reads the status of the payment or refund a Square
// answer wraps ({"payment":{...}}, {"refund":{...}}). Payment: APPROVED,
// PENDING, COMPLETED, CANCELED or FAILED
// (https://developer.squareup.com/reference/square/objects/Payment); refund:
// PENDING, COMPLETED, REJECTED or FAILED
// (https://developer.squareup.com/reference/square/objects/PaymentRefund).
// squareWord reads all of them (APPROVED, an authorised payment, as
// success); any other word is OperationUnknown, and any other document goes
// to DraftOperationStatus.
func squareOperationStatus(body []byte) OperationStatus {
	var doc struct {
		Payment *struct {
			Status string `json:"status"`
		} `json:"payment"`
		Refund *struct {
			Status string `json:"status"`
		} `json:"refund"`
	}
	if json.Unmarshal(body, &doc) == nil {
		switch {
		// A payment or refund with an empty or missing status is no
		// verdict (squareWord), not a plain resource.
		case doc.Payment != nil:
			return squareWord(doc.Payment.Status)
		case doc.Refund != nil:
			return squareWord(doc.Refund.Status)
		}
	}
	return DraftOperationStatus(body)
}

// squareWord reads one status of a Square payment or refund, as the pages
// above list them.
func squareWord(w string) OperationStatus {
	switch strings.ToUpper(strings.TrimSpace(w)) {
	case "PENDING":
		return OperationPending
	case "COMPLETED", "APPROVED":
		return OperationSucceeded
	case "FAILED", "REJECTED":
		return OperationFailed
	case "CANCELED":
		return OperationCanceled
	}
	return OperationUnknown
}

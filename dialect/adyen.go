package dialect

import (
	"encoding/json"
	"strings"
	"time"
)

// Pages the Adyen rules come from.
const (
	adyenIdempotencyURL = "https://docs.adyen.com/development-resources/api-idempotency/"
	adyenResponsesURL   = "https://docs.adyen.com/development-resources/response-handling/"
	adyenErrorsURL      = "https://docs.adyen.com/errors"
	adyenResultCodesURL = "https://docs.adyen.com/online-payments/build-your-integration/payment-result-codes"
	adyenAuthURL        = "https://docs.adyen.com/development-resources/api-authentication"
	adyenServiceErrURL  = "https://docs.adyen.com/development-resources/serviceexception"
	adyenCheckoutURL    = "https://docs.adyen.com/api-explorer/Checkout/71/post/payments"
)

// AdyenRetention is the shortest key validity Adyen has published:
// https://docs.adyen.com/development-resources/api-idempotency/ has said "7
// days", then "7 to 14 days", and now "a minimum period of 31 days" (with the
// earlier text kept as its legacy instructions). The lowest floor is the safe
// one: an intent is never resent after its key may be gone.
const AdyenRetention = 7 * 24 * time.Hour

// Adyen is the dialect of the Adyen APIs (Checkout and the others that take
// an idempotency key): the key travels in Idempotency-Key, up to 64
// characters, kept at least 7 days; a duplicate of a request still being
// processed is answered with error code 704; an Adyen 5xx without
// Transient-Error: true is the key's stored answer and is left for a
// reconciliation.
func Adyen() Dialect {
	return Dialect{
		Name: "adyen",
		// "send a request with the idempotency-key:<key> in the header. The
		// <key> is a unique identifier for the message with a maximum of 64
		// characters."
		// (https://docs.adyen.com/development-resources/api-idempotency/)
		KeyHeader:    "Idempotency-Key",
		MaxKeyLength: 64,
		Retention:    AdyenRetention,
		// Adyen echoes the key in an Idempotency-Key response header "to
		// verify that a request was processed idempotently"
		// (https://docs.adyen.com/development-resources/api-idempotency/): it
		// carries the key, not "true", so it cannot tell a replay from a
		// first answer.
		ReplayHeader:    "",
		Classify:        adyenClassify,
		OperationStatus: adyenOperationStatus,
		// "Authenticate your request by sending an API key in an x-API-key
		// HTTP request header." and, for basic authentication, "sending a
		// username and password in an Authorization HTTP request header."
		// (https://docs.adyen.com/development-resources/api-authentication)
		SecretHeaders: []string{"X-API-Key", "Authorization"},
		Docs: []string{adyenIdempotencyURL, adyenResponsesURL, adyenErrorsURL, adyenResultCodesURL, adyenAuthURL,
			adyenServiceErrURL, adyenCheckoutURL},
	}
}

// adyenError is what dialect.Adyen reads of an Adyen error body: the
// errorCode and errorType of the Checkout shape
// {"status","errorCode","message","errorType"}
// (https://docs.adyen.com/development-resources/serviceexception) and the
// errorCode of the RFC 7807 shape of the newer APIs
// (https://docs.adyen.com/errors). Adyen sends errorCode as a string; a
// number is read too.
type adyenError struct {
	Code string
	Type string
}

func readAdyenError(body []byte) adyenError {
	var doc struct {
		ErrorCode json.RawMessage `json:"errorCode"`
		ErrorType string          `json:"errorType"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return adyenError{}
	}
	return adyenError{Code: strings.Trim(string(doc.ErrorCode), `"`), Type: doc.ErrorType}
}

// adyenClassify judges an answer by Adyen's idempotency errors and falls back
// to DraftClassify.
//
// The error-handling part of
// https://docs.adyen.com/development-resources/api-idempotency/ says: "If you
// submit a duplicate request before the first request has completed, the API
// returns an HTTP 422 – Unprocessable Entity or HTTP 409 - Conflict status
// with the error code 704: 'request already processed or in progress'", and
// marks answers that are safe to retry with the same key with a
// transient-error: true header: "A subsequent request using the same
// idempotency key will be processed as if it was the first request."
// (https://docs.adyen.com/api-explorer/Checkout/71/post/payments,
// additionalData.RequestedTestErrorResponseCode).
func adyenClassify(a Answer) Verdict {
	if a.Status < 400 {
		return DraftClassify(a)
	}
	transient := headerTrue(a.Header, "Transient-Error")
	e := readAdyenError(a.Body)
	switch {
	case e.Code == "704":
		// The first request is still running: retry later with the same key.
		// Without the transient mark the first request may already have been
		// processed and a resend is not invited, so the intent is left for a
		// reconciliation. 704 comes with errorType "validation", which
		// therefore proves nothing about execution.
		if transient {
			return InProgress
		}
		return Unresolvable
	case e.Code == "703":
		// The idempotency store is down: "The system marks the request as a
		// transient error" (the idempotency page), whether or not the header
		// made it through. Adyen does not say the request did not run.
		return RetryMaybeExecuted
	case a.Status >= 500 && !transient && e.Type != "":
		// An Adyen error that is not transient "is stored as the final result
		// for the idempotency key. Subsequent messages with the same
		// idempotency key not be processed beyond returning the stored
		// response." (IOEXCEPTION_RECEIVED, same page as above), and Adyen
		// marks no replay: a resend returns this answer again, so it will not
		// tell whether the request took effect. A 5xx without an Adyen error
		// document (a proxy's 502) falls through to Draft and is retried.
		return Unresolvable
	}
	v := DraftClassify(a)
	// Any other answer marked transient may be retried with the same key;
	// Adyen does not say it was not processed, so it may have been.
	if transient && !v.Retry() {
		return RetryMaybeExecuted
	}
	// The rest is Draft: a transient 5xx RetryMaybeExecuted, 429
	// RetryNotExecuted, and 4xx ("validation", "security", "configuration")
	// Refused.
	return v
}

// adyenOperationStatus reads the resultCode of an Adyen payment
// (https://docs.adyen.com/online-payments/build-your-integration/payment-result-codes)
// and the status of a modification; a resultCode the page does not list is
// OperationUnknown, and any other document goes to DraftOperationStatus.
func adyenOperationStatus(body []byte) OperationStatus {
	var doc struct {
		ResultCode *string `json:"resultCode"`
		Status     string  `json:"status"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return DraftOperationStatus(body)
	}
	if doc.ResultCode == nil {
		// A modification (capture, refund, cancel) answers
		// {"status":"received"}: the request was received and its outcome
		// comes later in a webhook
		// (https://docs.adyen.com/online-payments/capture#capture-a-payment),
		// so it is not final.
		if doc.Status == "received" {
			return OperationPending
		}
		return DraftOperationStatus(body)
	}
	switch *doc.ResultCode {
	// "The payment was successfully authorised"; a partial authorisation took
	// money too.
	case "Authorised", "PartiallyAuthorised":
		return OperationSucceeded
	// AuthenticationFinished, AuthenticationNotRequired: "Returned for 3D
	// Secure 2 authentication-only transactions", whose work is the
	// authentication.
	case "AuthenticationFinished", "AuthenticationNotRequired":
		return OperationSucceeded
	// Received: "will be processed"; Pending: "the final status of the
	// payment is not available yet"; the *Shopper codes wait for the shopper
	// (redirect, 3D Secure, a voucher). None is final.
	case "Received", "Pending", "RedirectShopper", "IdentifyShopper",
		"ChallengeShopper", "PresentToShopper":
		return OperationPending
	// Refused and Error: "This is a final state."
	case "Refused", "Error":
		return OperationFailed
	// Cancelled "before processing was completed. This is a final state."
	case "Cancelled":
		return OperationCanceled
	}
	return OperationUnknown
}

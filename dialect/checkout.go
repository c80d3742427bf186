package dialect

import (
	"encoding/json"
	"net/http"
	"time"
)

// Pages the Checkout.com rules come from.
const (
	// The "Idempotency" page, last updated January 7, 2026 (also served at
	// its former address, https://checkout.com/docs/payments/manage-payments/retry-a-payment).
	checkoutIdempotencyURL = "https://www.checkout.com/docs/payments/manage-payments/idempotency"
	// "Why did I receive a 409 HTTP response to my idempotent API request
	// instead of 429?"
	checkoutConflictURL   = "https://support.checkout.com/hc/en-us/articles/24570669653010-Why-did-I-receive-a-409-HTTP-response-to-my-idempotent-API-request-instead-of-429"
	checkoutRateLimitsURL = "https://www.checkout.com/docs/developer-resources/api/api-rate-limits"
	// The idempotency page as of August 14, 2024, whose sentence on
	// concurrent requests the support article updates.
	checkoutIdempotency2024URL = "https://www.checkout.com/docs/developer-resources/api/idempotency"
	checkoutCardPayURL         = "https://www.checkout.com/docs/payments/accept-payments/request-a-card-payment"
	checkoutAPIKeysURL         = "https://www.checkout.com/docs/resources/api-authentication/api-keys"
)

// CheckoutRetention is how long Checkout.com keeps a key by default: "By
// default, keys expire after 24 hours for both the sandbox and production
// environments" (https://www.checkout.com/docs/payments/manage-payments/idempotency).
// The page lets an account manager change the production window; a client
// whose window is shorter sets a shorter WithRetention.
const CheckoutRetention = 24 * time.Hour

// CheckoutMaxKeyLength is the longest key the Checkout dialect sends.
// Checkout.com publishes no limit; its page says only "We strongly
// recommend using V4 UUIDs"
// (https://www.checkout.com/docs/payments/manage-payments/idempotency), so
// the one length the page vouches for, a UUID's 36 characters, is the
// limit: a longer key the API might cut short could make two intents one.
const CheckoutMaxKeyLength = 36

// Checkout is the dialect of the Checkout.com API: the key travels bare in
// Cko-Idempotency-Key, kept 24 hours; only a 2xx answer is kept and
// replayed, unmarked; a duplicate of a request still running gets 409.
//
// Only 2xx is kept: "This key is cached in our system if the request
// returns a 2xx response code", and "If the original request returns a
// 4xx or 5xxx response code, no idempotent result is saved and the payment
// is reattempted" (https://www.checkout.com/docs/payments/manage-payments/idempotency).
// A resend after a 4xx or 5xx therefore runs again, so the key does not
// make it safe; see checkoutClassify for what each answer means.
//
// Not confirmed by any Checkout.com page, and so not relied on: what a key
// sent again with another body gets (the page compares nothing but the key,
// and names no key-reuse error), a key length limit or format, a replay
// marker header, the body of the 409, and whether a 5xx answer ever means
// that nothing was executed.
func Checkout() Dialect {
	return Dialect{
		Name: "checkout",
		// "To perform an idempotent payment or payment action request,
		// provide a unique key in the Cko-Idempotency-Key HTTP header."
		// (https://www.checkout.com/docs/payments/manage-payments/idempotency)
		KeyHeader:    "Cko-Idempotency-Key",
		MaxKeyLength: CheckoutMaxKeyLength,
		Retention:    CheckoutRetention,
		// "Subsequent requests with the same key will return the same HTTP
		// status code and response body as the original request" (same
		// page): no header marks a replay.
		ReplayHeader:    "",
		Classify:        checkoutClassify,
		OperationStatus: checkoutOperationStatus,
		// "To use an API key in your request, you should provide it in the
		// Authorization header with the Bearer Prefix."
		// (https://www.checkout.com/docs/resources/api-authentication/api-keys):
		// secret by default anyway, listed as the page documents it.
		SecretHeaders: []string{"Authorization"},
		Docs: []string{checkoutIdempotencyURL, checkoutConflictURL, checkoutIdempotency2024URL,
			checkoutRateLimitsURL, checkoutCardPayURL, checkoutAPIKeysURL},
	}
}

// checkoutClassify judges an answer by Checkout.com's rules, which keep
// only 2xx answers:
//
//   - 2xx (and 3xx): as DraftClassify. A 2xx is kept and replayed to every
//     resend within the retention, so it is the request's final answer.
//   - 409: InProgress. "If we detect concurrent requests with the same
//     idempotency key, only one request will be processed and the other
//     requests will return a 429 Too many requests response. For example,
//     if you automatically retry a payment after experiencing a network
//     issue, while the original request is still being processed. We
//     recommend waiting at least 30 seconds before you reattempt a
//     request." (https://www.checkout.com/docs/developer-resources/api/idempotency,
//     August 14, 2024); since then "this has been replaced with the 409 –
//     Conflict with another request being processed HTTP response"
//     (https://support.checkout.com/hc/en-us/articles/24570669653010-Why-did-I-receive-a-409-HTTP-response-to-my-idempotent-API-request-instead-of-429).
//   - 429: RetryNotExecuted. "If you receive a 429 HTTP response, you may
//     be experiencing rate limiting", "we recommend that you implement an
//     automated retry mechanism for 429 responses"
//     (https://www.checkout.com/docs/developer-resources/api/api-rate-limits,
//     June 18, 2025; its earlier text: "The request can then be safely
//     retried"); the support article: "The 429 – Too many requests
//     response now only refers to rate limit issues."
//   - Any 5xx: Unresolvable. "If the original request returns a 4xx or
//     5xxx response code, no idempotent result is saved and the payment is
//     reattempted" (the idempotency page): a resend with the same key runs
//     the payment again, and no page says a 5xx answer means nothing was
//     executed, so the key cannot make the resend safe. The intent stays
//     unsettled for a reconciliation (find the payment by its reference).
//   - Any other 4xx: Refused. Not kept either, "For example, if there was
//     a validation error" (the sentence above goes on): this request was
//     refused. It proves nothing about an earlier attempt whose answer was
//     lost (that one may have ended in a 5xx after taking effect), so the
//     client settles the intent as failed only when no earlier attempt may
//     have taken effect.
//
// No answer is KeyReused or Rejected: Checkout.com documents no key-reuse
// error and no answer that refuses the key itself.
func checkoutClassify(a Answer) Verdict {
	switch {
	case a.Status < 400:
		return DraftClassify(a)
	case a.Status == http.StatusConflict:
		return InProgress
	case a.Status == http.StatusTooManyRequests:
		return RetryNotExecuted
	case a.Status >= 500:
		return Unresolvable
	}
	return Refused
}

// checkoutOperationStatus reads the status of a Checkout.com payment. "The
// possible values for the status field include Authorized, Captured, Card
// Verified, Declined, and Pending. Note that Pending only applies to 3D
// Secure payments and alternative payments."
// (https://www.checkout.com/docs/payments/accept-payments/request-a-card-payment).
// Any other document goes to DraftOperationStatus.
func checkoutOperationStatus(body []byte) OperationStatus {
	var doc struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &doc) == nil {
		switch doc.Status {
		// Authorized and Captured took the money; Card Verified is the
		// whole work of a card verification.
		case "Authorized", "Captured", "Card Verified":
			return OperationSucceeded
		case "Declined":
			return OperationFailed
		case "Pending":
			return OperationPending
		}
	}
	return DraftOperationStatus(body)
}

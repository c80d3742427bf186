package dialect

import (
	"net/http"
	"time"
)

// Pages the Stripe API v2 rules come from. The v2 namespace has its own
// idempotency rules; the v1 pages say so themselves: "The idempotency and
// response replay guidance applies to API v1. For API v2, see API v2
// idempotency, which uses different replay behavior and a 30-day window."
// (https://docs.stripe.com/error-low-level)
const (
	stripeV2OverviewURL    = "https://docs.stripe.com/api-v2-overview"
	stripeV2IdempotencyURL = "https://docs.stripe.com/api-v2-overview#idempotency"
)

// StripeV2Retention is how long Stripe's API v2 treats a repeated key as a
// retry: two requests are idempotent when they "occur within 30 days of
// each other" (https://docs.stripe.com/api-v2-overview#idempotency).
const StripeV2Retention = 30 * 24 * time.Hour

// StripeV2 is the dialect of Stripe's API v2 (the /v2 namespace, JSON
// bodies): the key travels bare in Idempotency-Key, up to 255 characters,
// and a repeat within 30 days is a retry. Unlike v1, a retry never replays
// a failure: "If the first request failed (or partially failed), the API
// re-executes the failed requests and returns the new response"
// (https://docs.stripe.com/api-v2-overview#idempotency), so a 5xx is
// always worth resending with the same key.
//
// Left out, because no Stripe page confirms it for v2: a replay marker
// (Idempotent-Replayed is documented on the v1 pages only, whose replay
// guidance "applies to API v1", https://docs.stripe.com/error-low-level);
// Stripe-Should-Retry (same page, same scope); the status, type and code
// of a key reused with other parameters and of a request still in
// progress (the v2 page names neither; the general rules below are
// Stripe's API-wide ones); the shape of the error Stripe returns "in the
// rare event that it's no longer possible for an idempotent replay to
// succeed" (it falls to the Draft rules: a 4xx is Refused, proving
// nothing); the Stripe-Version header every v2 request "must include"
// (https://docs.stripe.com/api-v2-overview), which is the caller's to set.
func StripeV2() Dialect {
	return Dialect{
		Name: "stripe-v2",
		// "To specify an idempotency key, use the Idempotency-Key header"
		// (https://docs.stripe.com/api-v2-overview#idempotency).
		KeyHeader: "Idempotency-Key",
		// "Idempotency keys are up to 255 characters long."
		// (https://docs.stripe.com/api/idempotent_requests, the page that
		// describes the v1 and the v2 behaviour side by side.)
		MaxKeyLength: 255,
		Retention:    StripeV2Retention,
		// No replay marker is documented for v2 (see above).
		ReplayHeader:    "",
		Classify:        stripeV2Classify,
		OperationStatus: DraftOperationStatus,
		// The v2 examples authenticate with -H "Authorization: Bearer
		// {{YOUR_API_KEY}}" (https://docs.stripe.com/api-v2-overview);
		// secret by default anyway, listed as the page shows it.
		SecretHeaders: []string{"Authorization"},
		Docs: []string{stripeV2OverviewURL, stripeV2IdempotencyURL, stripeIdempotencyURL,
			stripeErrorsURL, stripeErrorCodesURL, stripeLowLevelURL},
	}
}

// stripeV2Classify judges an answer by Stripe's API v2 rules. Stripe's
// SDKs read a v2 error from the same {"error":{"type","code",...}}
// document as a v1 one (stripe-node's RequestSender hands
// jsonResponse.error to generateV2Error, which maps type
// "idempotency_error" to StripeIdempotencyError,
// https://github.com/stripe/stripe-node/blob/master/src/Error.ts), so the
// body is read as in Stripe.
func stripeV2Classify(a Answer) Verdict {
	if a.Status < 400 {
		return DraftClassify(a)
	}
	e := readStripeError(a.Body)
	switch {
	// 409: "The request conflicts with another request (perhaps due to
	// using the same idempotent key)" (https://docs.stripe.com/api/errors);
	// idempotency_key_in_use: "The idempotency key provided is currently
	// being used in another request" (https://docs.stripe.com/error-codes).
	// The other request may still take effect.
	case a.Status == http.StatusConflict || e.Code == "idempotency_key_in_use":
		return InProgress
	// idempotency_error: "an Idempotency-Key is re-used on a request that
	// does not match the first request's API endpoint and parameters"
	// (https://docs.stripe.com/api/errors); stripe-node raises it for a v2
	// answer as for a v1 one (Error.ts, above).
	case a.Status < 500 && e.Type == "idempotency_error":
		return KeyReused
	}
	// Everything else is Draft's. A 5xx is RetryMaybeExecuted, replay
	// marker or not: in v2 a retry with the key "re-executes the failed
	// requests" rather than replaying the failure, and "If the first
	// request succeeded, the API skips making new changes"
	// (https://docs.stripe.com/api-v2-overview#idempotency), so the resend
	// is safe and settles the outcome. A 4xx (a decline, a validation
	// error, the "error explaining why" a replay cannot succeed) is
	// Refused: it proves nothing about an earlier attempt that may have
	// partly run.
	return DraftClassify(a)
}

package dialect

import (
	"testing"
	"time"
)

// Stripe error bodies as the API sends them (docs.stripe.com/api/errors).
const (
	stripeInUse = `{"error":{"code":"idempotency_key_in_use","doc_url":"https://stripe.com/docs/error-codes/idempotency-key-in-use",` +
		`"message":"There is currently another in-progress request using this Idempotent Key.","type":"invalid_request_error"}}`
	stripeMismatch = `{"error":{"message":"Keys for idempotent requests can only be used with the same parameters they were first used with.",` +
		`"type":"idempotency_error"}}`
	stripeDecline  = `{"error":{"code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.","type":"card_error"}}`
	stripeRate     = `{"error":{"code":"rate_limit","message":"Too many requests hit the API too quickly.","type":"invalid_request_error"}}`
	stripeLock     = `{"error":{"code":"lock_timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it.","type":"invalid_request_error"}}`
	stripeInvalid  = `{"error":{"code":"parameter_missing","message":"Missing required param: amount.","param":"amount","type":"invalid_request_error"}}`
	stripeAPIError = `{"error":{"message":"An unknown error occurred","type":"api_error"}}`
	stripeAuth     = `{"error":{"message":"Invalid API Key provided: sk_test_****","type":"invalid_request_error"}}`
)

func TestStripeFields(t *testing.T) {
	d := Stripe()
	if d.KeyHeader != "Idempotency-Key" || d.KeyField != "" || d.QuotedKey {
		t.Errorf("key placement: header %q field %q quoted %v", d.KeyHeader, d.KeyField, d.QuotedKey)
	}
	if d.Retention != 24*time.Hour {
		t.Errorf("Retention = %s", d.Retention)
	}
	if !d.Replayed(provAnswer(200, "", "Idempotent-Replayed", "true").Header) {
		t.Error("Idempotent-Replayed: true is not a replay")
	}
	checkKeyLimit(t, d, 255)
}

func TestStripeClassify(t *testing.T) {
	checkVerdicts(t, Stripe(), []verdictCase{
		{"201 created", provAnswer(201, `{"id":"pi_1"}`), Success},
		{"200 replay", provAnswer(200, `{"id":"pi_1"}`, "Idempotent-Replayed", "true"), Success},
		{"409 key in use", provAnswer(409, stripeInUse), InProgress},
		{"409 idempotency_error in use", provAnswer(409,
			`{"error":{"code":"idempotency_key_in_use","type":"idempotency_error"}}`), InProgress},
		{"409 no body", provAnswer(409, ""), InProgress},
		{"400 params differ", provAnswer(400, stripeMismatch), KeyReused},
		{"400 validation", provAnswer(400, stripeInvalid), Refused},
		{"401", provAnswer(401, stripeAuth), Refused},
		{"402 card declined", provAnswer(402, stripeDecline), Refused},
		// A replayed 4xx is the saved answer of the key's first execution:
		// final, even after a lost answer.
		{"402 replayed decline", provAnswer(402, stripeDecline, "Idempotent-Replayed", "true"), Rejected},
		{"400 replayed", provAnswer(400, stripeInvalid, "Idempotent-Replayed", "true"), Rejected},
		{"402 replayed, Should-Retry true", provAnswer(402, stripeDecline, "Idempotent-Replayed", "true", "Stripe-Should-Retry", "true"), RetryMaybeExecuted},
		{"429 rate limit", provAnswer(429, stripeRate), RetryNotExecuted},
		{"429 lock timeout", provAnswer(429, stripeLock), RetryMaybeExecuted},
		{"500 fresh", provAnswer(500, stripeAPIError), RetryMaybeExecuted},
		{"500 replayed", provAnswer(500, stripeAPIError, "Idempotent-Replayed", "true"), Unresolvable},
		{"502 replayed", provAnswer(502, stripeAPIError, "Idempotent-Replayed", "True"), Unresolvable},
		{"503", provAnswer(503, stripeAPIError), RetryMaybeExecuted},
		{"not JSON 500", provAnswer(500, "<html>oops</html>"), RetryMaybeExecuted},
	})
}

func TestStripeShouldRetry(t *testing.T) {
	checkVerdicts(t, Stripe(), []verdictCase{
		// true: retry, even where the status alone would stop.
		{"400 true", provAnswer(400, stripeInvalid, "Stripe-Should-Retry", "true"), RetryMaybeExecuted},
		{"replayed 500 true", provAnswer(500, stripeAPIError, "Idempotent-Replayed", "true", "Stripe-Should-Retry", "true"), RetryMaybeExecuted},
		{"429 true", provAnswer(429, stripeRate, "Stripe-Should-Retry", "true"), RetryNotExecuted},
		{"409 true", provAnswer(409, stripeInUse, "Stripe-Should-Retry", "true"), InProgress},
		// false: no retry, and no proof the request did not run.
		{"500 false", provAnswer(500, stripeAPIError, "Stripe-Should-Retry", "false"), Unresolvable},
		{"409 false", provAnswer(409, stripeInUse, "Stripe-Should-Retry", "false"), Unresolvable},
		{"429 false", provAnswer(429, stripeRate, "Stripe-Should-Retry", "false"), Refused},
		{"400 false", provAnswer(400, stripeInvalid, "Stripe-Should-Retry", "false"), Refused},
		{"400 mismatch false", provAnswer(400, stripeMismatch, "Stripe-Should-Retry", "false"), KeyReused},
		// A 2xx is final whatever the header says.
		{"200 false", provAnswer(200, `{}`, "Stripe-Should-Retry", "false"), Success},
		{"500 other value", provAnswer(500, stripeAPIError, "Stripe-Should-Retry", "maybe"), RetryMaybeExecuted},
	})
}

func TestStripeOperationStatus(t *testing.T) {
	checkStatuses(t, Stripe(), []statusCase{
		{"succeeded", `{"object":"payment_intent","status":"succeeded"}`, OperationSucceeded},
		{"processing", `{"object":"payment_intent","status":"processing"}`, OperationPending},
		{"requires_action", `{"object":"payment_intent","status":"requires_action"}`, OperationPending},
		{"requires_payment_method", `{"object":"payment_intent","status":"requires_payment_method"}`, OperationPending},
		{"requires_confirmation", `{"object":"payment_intent","status":"requires_confirmation"}`, OperationPending},
		{"requires_capture", `{"object":"payment_intent","status":"requires_capture"}`, OperationSucceeded},
		{"canceled", `{"object":"payment_intent","status":"canceled"}`, OperationCanceled},
		{"charge failed", `{"object":"charge","status":"failed"}`, OperationFailed},
		{"no status", `{"id":"cus_1"}`, OperationSucceeded},
	})
}

// stripe-mock's answers (github.com/stripe/stripe-mock v0.203.0,
// server/server.go), as internal/stripemock receives them from the real
// process: error envelopes with a type and no code, the key echoed, never
// Idempotent-Replayed. Each is judged as Stripe's own answer of that
// status and type would be.
func TestStripeClassifyStripeMockAnswers(t *testing.T) {
	const (
		mockValidation = `{"error":{"message":"Request validation error: validator 0xc000 failed: object property 'amount' is required","type":"invalid_request_error"}}`
		mockRoute      = `{"error":{"message":"Unrecognized request URL (POST: /v1/payment_intentions).","type":"invalid_request_error"}}`
		mockAuth       = `{"error":{"message":"Please authenticate by specifying an ` + "`Authorization`" + ` header with any valid looking testmode secret API key.","type":"invalid_request_error"}}`
		mockMediaType  = `{"error":{"message":"Request's ` + "`Content-Type`" + ` didn't match the path's expected media type.","type":"invalid_request_error"}}`
	)
	checkVerdicts(t, Stripe(), []verdictCase{
		{"200 with the key echoed", provAnswer(200, `{"id":"pi_1","object":"payment_intent"}`,
			"Idempotency-Key", "k", "Request-Id", "req_123", "Stripe-Mock-Version", "master"), Success},
		{"400 schema validation", provAnswer(400, mockValidation, "Idempotency-Key", "k"), Refused},
		{"400 media type", provAnswer(400, mockMediaType, "Idempotency-Key", "k"), Refused},
		{"404 unknown URL", provAnswer(404, mockRoute, "Idempotency-Key", "k"), Refused},
		{"401 no key", provAnswer(401, mockAuth), Refused},
	})
	if Stripe().Replayed(provAnswer(200, `{}`, "Idempotency-Key", "k").Header) {
		t.Error("an echoed Idempotency-Key is not a replay")
	}
}

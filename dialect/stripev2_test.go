package dialect

import (
	"testing"
	"time"
)

func TestStripeV2Fields(t *testing.T) {
	d := StripeV2()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Name != "stripe-v2" || d.KeyHeader != "Idempotency-Key" || d.KeyField != "" || d.QuotedKey {
		t.Errorf("name %q, key placement: header %q field %q quoted %v", d.Name, d.KeyHeader, d.KeyField, d.QuotedKey)
	}
	// "occur within 30 days of each other" (docs.stripe.com/api-v2-overview).
	if d.Retention != 30*24*time.Hour {
		t.Errorf("Retention = %s, want 720h", d.Retention)
	}
	// No replay marker is documented for v2: v1's header marks nothing.
	if d.ReplayHeader != "" {
		t.Errorf("ReplayHeader = %q, want none", d.ReplayHeader)
	}
	if d.Replayed(provAnswer(200, "", "Idempotent-Replayed", "true").Header) {
		t.Error("Idempotent-Replayed: true counted as a v2 replay")
	}
	checkKeyLimit(t, d, 255)
}

// The v2 rules differ from v1's where the v2 page says so: a retry
// re-executes failed work, so no 5xx (replayed or not) is Unresolvable
// and no replayed 4xx is a final failure.
func TestStripeV2Classify(t *testing.T) {
	checkVerdicts(t, StripeV2(), []verdictCase{
		{"201 created", provAnswer(201, `{"id":"pay_1"}`), Success},
		{"200 retry of a success", provAnswer(200, `{"id":"pay_1"}`), Success},
		{"409 key in use", provAnswer(409, stripeInUse), InProgress},
		{"409 no body", provAnswer(409, ""), InProgress},
		{"400 idempotency_error", provAnswer(400, stripeMismatch), KeyReused},
		{"409 idempotency_error is in progress", provAnswer(409, `{"error":{"type":"idempotency_error"}}`), InProgress},
		{"422 idempotency_error", provAnswer(422, `{"error":{"type":"idempotency_error","message":"x"}}`), KeyReused},
		{"400 validation", provAnswer(400, `{"error":{"type":"invalid_request_error","code":"invalid_fields"}}`), Refused},
		{"402 decline", provAnswer(402, stripeDecline), Refused},
		{"402 decline marked as v1 replay", provAnswer(402, stripeDecline, "Idempotent-Replayed", "true"), Refused},
		{"401", provAnswer(401, stripeAuth), Refused},
		{"500", provAnswer(500, stripeAPIError), RetryMaybeExecuted},
		{"500 marked as v1 replay", provAnswer(500, stripeAPIError, "Idempotent-Replayed", "true"), RetryMaybeExecuted},
		{"502", provAnswer(502, stripeAPIError), RetryMaybeExecuted},
		{"503", provAnswer(503, stripeAPIError), RetryMaybeExecuted},
		{"500 idempotency_error is not reuse", provAnswer(500, `{"error":{"type":"idempotency_error"}}`), RetryMaybeExecuted},
		{"501", provAnswer(501, stripeAPIError), Refused},
		{"429", provAnswer(429, stripeRate), RetryNotExecuted},
		{"not JSON 400", provAnswer(400, "<html>bad</html>"), Refused},
		{"302 after POST", provAnswer(302, ""), Unresolvable},
	})
}

// Stripe-Should-Retry is documented for v1 only: v2 ignores it.
func TestStripeV2IgnoresShouldRetry(t *testing.T) {
	checkVerdicts(t, StripeV2(), []verdictCase{
		{"500 false", provAnswer(500, stripeAPIError, "Stripe-Should-Retry", "false"), RetryMaybeExecuted},
		{"400 true", provAnswer(400, stripeInvalid, "Stripe-Should-Retry", "true"), Refused},
	})
}

func TestStripeV2OperationStatus(t *testing.T) {
	checkStatuses(t, StripeV2(), []statusCase{
		{"succeeded", `{"status":"succeeded"}`, OperationSucceeded},
		{"failed", `{"status":"failed"}`, OperationFailed},
		{"no status", `{"id":"pay_1"}`, OperationSucceeded},
		{"not JSON", `oops`, OperationUnknown},
	})
}

package dialect

import (
	"testing"
	"time"
)

// Checkout.com answers as its pages show them: the 201 of
// request-a-card-payment, the 422 of its API reference.
const (
	checkoutAuthorized = `{"id":"pay_mbabizu24mvu3mela5njyhpit4","action_id":"act_mbabizu24mvu3mela5njyhpit4",` +
		`"amount":6500,"currency":"USD","approved":true,"status":"Authorized","response_code":"10000"}`
	checkoutInvalid = `{"request_id":"0HL80RJLS76I7","error_type":"request_invalid","error_codes":["payment_source_required"]}`
)

func TestCheckoutFields(t *testing.T) {
	d := Checkout()
	if d.KeyHeader != "Cko-Idempotency-Key" || d.KeyField != "" || d.QuotedKey || d.ReplayHeader != "" {
		t.Errorf("key placement: header %q field %q quoted %v replay %q", d.KeyHeader, d.KeyField, d.QuotedKey, d.ReplayHeader)
	}
	if d.Retention != 24*time.Hour {
		t.Errorf("Retention = %s", d.Retention)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	checkKeyLimit(t, d, 36)
	if err := d.CheckKey("74f18c1e-e797-4794-9cc5-f0bd4d771e93"); err != nil {
		t.Errorf("a V4 UUID, the key the page recommends: %v", err)
	}
}

func TestCheckoutClassify(t *testing.T) {
	checkVerdicts(t, Checkout(), []verdictCase{
		{"201 authorized", provAnswer(201, checkoutAuthorized, "Cko-Request-Id", "5fa7ee8c-f82d-4440-a6dc-e8c859b03235"), Success},
		{"202 pending 3DS, no Location", provAnswer(202, `{"id":"pay_mbabizu24mvu3mela5njyhpit4","status":"Pending"}`), Success},
		{"201 declined is still the request's final answer", provAnswer(201, `{"approved":false,"status":"Declined"}`), Success},
		{"409 concurrent duplicate", provAnswer(409, ""), InProgress},
		{"409 with an error body", provAnswer(409, checkoutInvalid), InProgress},
		{"429 rate limited", provAnswer(429, ""), RetryNotExecuted},
		// 4xx is not kept and says this request was not processed.
		{"422 validation", provAnswer(422, checkoutInvalid), Refused},
		{"401 empty body", provAnswer(401, ""), Refused},
		{"403", provAnswer(403, ""), Refused},
		{"404", provAnswer(404, ""), Refused},
		// A 422 shaped like this project's key-reuse problem is still a
		// Checkout validation error: the dialect has no key-reuse rule.
		{"422 problem key-reused", Answer{Method: "POST", Status: 422,
			Header: map[string][]string{"Content-Type": {"application/problem+json"}},
			Body:   []byte(`{"type":"` + ProblemTypePrefix + `key-reused","status":422}`)}, Refused},
		// 5xx is not kept: the resend would run again, so no blind retry.
		{"500", provAnswer(500, ""), Unresolvable},
		{"502 bad gateway", provAnswer(502, ""), Unresolvable},
		{"503", provAnswer(503, ""), Unresolvable},
		{"503 store-unavailable problem", Answer{Method: "POST", Status: 503,
			Header: map[string][]string{"Content-Type": {"application/problem+json"}},
			Body:   []byte(`{"type":"` + ProblemTypePrefix + `store-unavailable","status":503}`)}, Unresolvable},
		{"302 after POST", provAnswer(302, "", "Location", "/elsewhere"), Unresolvable},
	})
}

// TestCheckoutVerdictsNeverRetryUnsafely: no Checkout verdict asks for a
// resend that may run a payment again after it may have taken effect,
// except InProgress, where the first request is documented to be the only
// one processed.
func TestCheckoutVerdictsNeverRetryUnsafely(t *testing.T) {
	d := Checkout()
	for status := 100; status <= 599; status++ {
		v := d.Classify(provAnswer(status, ""))
		if v == RetryMaybeExecuted {
			t.Errorf("%d: RetryMaybeExecuted, but Checkout.com keeps no non-2xx answer, so a resend runs again", status)
		}
		if v == Unjudged {
			t.Errorf("%d: unjudged", status)
		}
	}
}

func TestCheckoutOperationStatus(t *testing.T) {
	st := func(s string) string { return `{"id":"pay_mbabizu24mvu3mela5njyhpit4","status":"` + s + `"}` }
	checkStatuses(t, Checkout(), []statusCase{
		{"Authorized", st("Authorized"), OperationSucceeded},
		{"Captured", st("Captured"), OperationSucceeded},
		{"Card Verified", st("Card Verified"), OperationSucceeded},
		{"Declined", st("Declined"), OperationFailed},
		{"Pending", st("Pending"), OperationPending},
		{"a word no page lists", st("Retry Scheduled"), OperationUnknown},
		{"not JSON", "<html>", OperationUnknown},
	})
}

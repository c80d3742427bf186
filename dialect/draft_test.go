package dialect

import (
	"net/http"
	"testing"
)

// problem builds an answer carrying an RFC 9457 problem of this project's
// type suffix.
func problem(status int, suffix string) Answer {
	a := provAnswer(status, `{"type":"`+ProblemTypePrefix+suffix+`","status":0}`)
	a.Header.Set("Content-Type", "application/problem+json")
	return a
}

func TestDraftClassify(t *testing.T) {
	withLocation := provAnswer(202, "", "Location", "/v1/operations/op_1")
	checkVerdicts(t, Draft(), []verdictCase{
		{"202 with Location", withLocation, Accepted},
		{"202 without Location", provAnswer(202, ""), Success},
		{"201", provAnswer(201, `{}`), Success},
		{"303", provAnswer(303, "", "Location", "/v1/payments/1"), Success},
		{"301", provAnswer(301, ""), Unresolvable},
		{"302", provAnswer(302, ""), Unresolvable},
		{"100", provAnswer(100, ""), Unresolvable},
		{"409 any body", provAnswer(409, `{"error":"busy"}`), InProgress},
		{"422 key-reused", problem(422, "key-reused"), KeyReused},
		{"422 key-reused as plain JSON", provAnswer(422, `{"type":"`+ProblemTypePrefix+`key-reused"}`), Refused},
		{"422 validation", provAnswer(422, `{"error":"amount"}`), Refused},
		{"400 missing-key", problem(400, "missing-key"), Rejected},
		{"400 invalid-key", problem(400, "invalid-key"), Rejected},
		{"400 other", provAnswer(400, `{}`), Refused},
		{"503 store-unavailable", problem(503, "store-unavailable"), RetryNotExecuted},
		{"503 other", provAnswer(503, ""), RetryMaybeExecuted},
		{"408", provAnswer(408, ""), RetryNotExecuted},
		{"425", provAnswer(425, ""), RetryNotExecuted},
		{"429", provAnswer(429, ""), RetryNotExecuted},
		{"501", provAnswer(501, ""), Refused},
		{"505", provAnswer(505, ""), Refused},
		{"500", provAnswer(500, ""), RetryMaybeExecuted},
		{"524", provAnswer(524, ""), RetryMaybeExecuted},
		{"401", provAnswer(401, ""), Refused},
		{"403", provAnswer(403, ""), Refused},
	})
}

func TestProblemType(t *testing.T) {
	a := provAnswer(400, `{"title":"no type"}`)
	a.Header.Set("Content-Type", "application/problem+json; charset=utf-8")
	if got := ProblemType(a); got != "about:blank" {
		t.Errorf("problem without type = %q, want about:blank", got)
	}
	a.Header.Set("Content-Type", "application/json")
	if got := ProblemType(a); got != "" {
		t.Errorf("plain JSON = %q, want empty", got)
	}
	a = Answer{Status: 400, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte("{")}
	if got := ProblemType(a); got != "" {
		t.Errorf("broken problem = %q, want empty", got)
	}
}

func TestDraftOperationStatus(t *testing.T) {
	checkStatuses(t, Draft(), []statusCase{
		{"pending", `{"status":"pending"}`, OperationPending},
		{"Azure Running", `{"status":"Running"}`, OperationPending},
		{"Azure NotStarted", `{"status":"NotStarted"}`, OperationPending},
		{"in progress, spaced", `{"status":"In Progress"}`, OperationPending},
		{"in-progress", `{"status":"in-progress"}`, OperationPending},
		{"failed", `{"status":"failed"}`, OperationFailed},
		{"declined, listed by no source of Draft", `{"status":"DECLINED"}`, OperationUnknown},
		{"Canceled", `{"status":"Canceled"}`, OperationCanceled},
		{"cancelled, listed by no source of Draft", `{"status":"cancelled"}`, OperationUnknown},
		{"Succeeded", `{"status":"Succeeded"}`, OperationSucceeded},
		{"unknown word", `{"status":"shipped"}`, OperationUnknown},
		{"status not a string", `{"status":3}`, OperationUnknown},
		{"status an object", `{"status":{"code":"succeeded"}}`, OperationUnknown},
		{"status null", `{"status":null}`, OperationUnknown},
		{"Google not done", `{"name":"operations/1","done":false}`, OperationPending},
		{"Google done with error", `{"done":true,"error":{"code":13}}`, OperationFailed},
		{"Google done, null error", `{"done":true,"error":null}`, OperationSucceeded},
		{"Google done", `{"done":true,"response":{}}`, OperationSucceeded},
		{"no status", `{"id":"pay_1"}`, OperationSucceeded},
		{"not JSON", `<html></html>`, OperationUnknown},
		{"empty body", ``, OperationUnknown},
		{"JSON array", `[{"status":"succeeded"}]`, OperationUnknown},
		{"broken JSON", `{"status":"succeeded"`, OperationUnknown},
	})
}

// TestDraftUnknownWordsAreNoVerdict: a word no source of Draft documents is
// never read as success or failure, whatever it seems to say.
func TestDraftUnknownWordsAreNoVerdict(t *testing.T) {
	for _, w := range []string{"expired", "denied", "refused", "timed_out", "reversed", "returned",
		"unknown", "blocked", "voided", "on_hold", "requires_action", "partially_failed",
		"success", "completed", "ok", "paid", "error", "rejected", ""} {
		// Words a provider's page lists (PayPal's in upper case).
		documented := map[string]bool{"stripe:requires_action": true,
			"paypal:denied": true, "paypal:voided": true, "paypal:completed": true}
		body := `{"status":"` + w + `"}`
		for _, d := range []Dialect{Draft(), Stripe(), PayPal(), Adyen(), Square()} {
			if documented[d.Name+":"+w] {
				continue
			}
			if got := d.OperationStatus([]byte(body)); got != OperationUnknown && got != OperationPending {
				t.Errorf("%s: %s = %s, want unknown (or pending)", d.Name, body, got)
			}
		}
	}
}

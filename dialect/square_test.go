package dialect

import "testing"

// Square error bodies as the API sends them (squareErrorsURL).
const (
	squareReused = `{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED",` +
		`"detail":"The idempotency key can only be retried with the same request data.","field":"idempotency_key"}]}`
	squareTemporary = `{"errors":[{"category":"API_ERROR","code":"TEMPORARY_ERROR","detail":"A temporary internal error occurred."}]}`
	squareDeclined  = `{"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED","detail":"Authorization error: 'CARD_DECLINED'"}],` +
		`"payment":{"id":"R2B3Z8WMVt3EAmzYWLZvz7Y69EbZY","status":"FAILED"}}`
	squareRateLimited = `{"errors":[{"category":"RATE_LIMIT_ERROR","code":"RATE_LIMITED","detail":"Rate limited."}]}`
	squareInternal    = `{"errors":[{"category":"API_ERROR","code":"INTERNAL_SERVER_ERROR","detail":"An internal error has occurred."}]}`
	squareConflict    = `{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"CONFLICT","detail":"Conflict."}]}`
	squareAuth        = `{"errors":[{"category":"AUTHENTICATION_ERROR","code":"UNAUTHORIZED","detail":"This request could not be authorized."}]}`
	squareTwoErrors   = `{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"MISSING_REQUIRED_PARAMETER","field":"amount_money"},` +
		`{"category":"API_ERROR","code":"TEMPORARY_ERROR"}]}`
)

func TestSquareFields(t *testing.T) {
	d := Square()
	if d.KeyField != "idempotency_key" || d.KeyHeader != "" || d.QuotedKey || d.ReplayHeader != "" {
		t.Errorf("key placement: field %q header %q quoted %v replay %q", d.KeyField, d.KeyHeader, d.QuotedKey, d.ReplayHeader)
	}
	if d.Retention != 0 {
		t.Errorf("Retention = %s, want 0 (not published)", d.Retention)
	}
	checkKeyLimit(t, d, 45)
}

func TestSquareClassify(t *testing.T) {
	checkVerdicts(t, Square(), []verdictCase{
		{"200 payment", provAnswer(200, `{"payment":{"id":"R2B3Z8WMVt3EAmzYWLZvz7Y69EbZY","status":"COMPLETED"}}`), Success},
		{"400 key reused", provAnswer(400, squareReused), KeyReused},
		{"409 key reused", provAnswer(409, squareReused), KeyReused},
		{"500 temporary", provAnswer(500, squareTemporary), RetryMaybeExecuted},
		{"400 temporary", provAnswer(400, squareTemporary), RetryMaybeExecuted},
		{"400 first error decides", provAnswer(400, squareTwoErrors), Refused},
		{"402 card declined", provAnswer(402, squareDeclined), Refused},
		{"429 rate limited", provAnswer(429, squareRateLimited), RetryNotExecuted},
		{"500 internal", provAnswer(500, squareInternal), RetryMaybeExecuted},
		{"409 conflict", provAnswer(409, squareConflict), InProgress},
		{"401", provAnswer(401, squareAuth), Refused},
		{"not JSON 503", provAnswer(503, "unavailable"), RetryMaybeExecuted},
	})
}

func TestSquareOperationStatus(t *testing.T) {
	payment := func(s string) string {
		return `{"payment":{"id":"R2B3Z8WMVt3EAmzYWLZvz7Y69EbZY","status":"` + s + `"}}`
	}
	refund := func(s string) string {
		return `{"refund":{"id":"R2B3Z8WMVt3EAmzYWLZvz7Y69EbZY_1","status":"` + s + `"}}`
	}
	checkStatuses(t, Square(), []statusCase{
		{"payment approved", payment("APPROVED"), OperationSucceeded},
		{"payment pending", payment("PENDING"), OperationPending},
		{"payment completed", payment("COMPLETED"), OperationSucceeded},
		{"payment canceled", payment("CANCELED"), OperationCanceled},
		{"payment failed", payment("FAILED"), OperationFailed},
		{"refund pending", refund("PENDING"), OperationPending},
		{"refund completed", refund("COMPLETED"), OperationSucceeded},
		{"refund rejected", refund("REJECTED"), OperationFailed},
		{"refund failed", refund("FAILED"), OperationFailed},
		{"payment in a word no page lists", payment("EXPIRED"), OperationUnknown},
		{"payment with an empty status", payment(""), OperationUnknown},
		{"payment without a status", `{"payment":{"id":"pay_1"}}`, OperationUnknown},
		{"top-level status", `{"status":"PENDING"}`, OperationPending},
		{"no status", `{"customer":{"id":"JDKYHBWT1D4F8MFH63DBMEN8Y4"}}`, OperationSucceeded},
	})
}

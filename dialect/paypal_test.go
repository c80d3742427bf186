package dialect

import (
	"testing"
	"time"
)

// PayPal error bodies as the REST APIs send them (paypalResponsesURL and
// the issues of paypalSpecURL).
const (
	paypalInProgress = `{"name":"RESOURCE_CONFLICT","message":"The server has detected a conflict while processing this request.",` +
		`"debug_id":"90957fca61718","details":[{"issue":"PREVIOUS_REQUEST_IN_PROGRESS",` +
		`"description":"A previous request on this resource is currently in progress. Please wait for sometime and try again."}]}`
	paypalConflict          = `{"name":"RESOURCE_CONFLICT","message":"The server has detected a conflict while processing this request.","debug_id":"90957fca61718"}`
	paypalCompletionPending = `{"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed, semantically incorrect, or failed business validation.",` +
		`"debug_id":"90957fca61718","details":[{"issue":"ORDER_COMPLETION_IN_PROGRESS","description":"PayPal is still in the process of capturing the order on your behalf as instructed. Please try your request again."}]}`
	paypalIDUsed = `{"name":"UNPROCESSABLE_ENTITY","debug_id":"90957fca61718",` +
		`"details":[{"issue":"PAYPAL_REQUEST_ID_PREVIOUSLY_USED","description":"The PayPal-Request-ID has already been used for another request."}]}`
	paypalDuplicateV1 = `{"name":"DUPLICATE_REQUEST_ID","message":"The value of PayPal-Request-Id header has already been used.","debug_id":"90957fca61718"}`
	paypalDeclined    = `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED","description":"The instrument presented was either declined by the processor or bank, or it can't be used for this payment."}]}`
	paypalCaptured    = `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"ORDER_ALREADY_CAPTURED","description":"Order already captured. If 'intent=CAPTURE' only one capture per order is allowed."}]}`
	paypalNeedsID     = `{"name":"INVALID_REQUEST","details":[{"issue":"PAYPAL_REQUEST_ID_REQUIRED","description":"A PayPal-Request-Id is required if you are trying to process payment for an Order."}]}`
	paypalInternal    = `{"name":"INTERNAL_SERVER_ERROR","message":"An internal server error occurred.","debug_id":"90957fca61718"}`
	paypalUnavailable = `{"name":"SERVICE_UNAVAILABLE","message":"Service Unavailable.","debug_id":"90957fca61718"}`
	paypalRateLimited = `{"name":"RATE_LIMIT_REACHED","message":"Too many requests. Blocked due to rate limiting.","debug_id":"90957fca61718"}`
	// As the simulator sends them: details without location, and an
	// information_link as in the error_500 example of checkout_orders_v2.json.
	paypalIDUsedLinked = `{"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed, semantically incorrect, or failed business validation.",` +
		`"debug_id":"90957fca61718","details":[{"issue":"PAYPAL_REQUEST_ID_PREVIOUSLY_USED","description":"The PayPal-Request-ID has already been used for another request."}],` +
		`"links":[{"href":"https://developer.paypal.com/api/orders/v2/#error-PAYPAL_REQUEST_ID_PREVIOUSLY_USED","rel":"information_link"}]}`
	paypalTooLongID = `{"name":"INVALID_REQUEST","message":"Request is not well-formed, syntactically incorrect, or violates schema.","debug_id":"90957fca61718",` +
		`"details":[{"issue":"INVALID_STRING_LENGTH","description":"The value of a field is either too short or too long"}],` +
		`"links":[{"href":"https://developer.paypal.com/api/orders/v2/#error-INVALID_STRING_LENGTH","rel":"information_link"}]}`
)

func TestPayPalFields(t *testing.T) {
	d := PayPal()
	if d.KeyHeader != "PayPal-Request-Id" || d.KeyField != "" || d.QuotedKey || d.ReplayHeader != "" {
		t.Errorf("key placement: header %q field %q quoted %v replay %q", d.KeyHeader, d.KeyField, d.QuotedKey, d.ReplayHeader)
	}
	if d.Retention != 6*time.Hour {
		t.Errorf("Retention = %s", d.Retention)
	}
	checkKeyLimit(t, d, 108)
}

func TestPayPalClassify(t *testing.T) {
	checkVerdicts(t, PayPal(), []verdictCase{
		{"201 created", provAnswer(201, `{"id":"5O190127TN364715T","status":"CREATED"}`), Success},
		{"200 repeat of a created order", provAnswer(200, `{"id":"5O190127TN364715T","status":"CREATED"}`), Success},
		{"409 previous request in progress", provAnswer(409, paypalInProgress), InProgress},
		{"409 other conflict", provAnswer(409, paypalConflict), InProgress},
		{"422 order completion in progress", provAnswer(422, paypalCompletionPending), InProgress},
		{"422 request id used", provAnswer(422, paypalIDUsed), KeyReused},
		{"400 duplicate request id (v1)", provAnswer(400, paypalDuplicateV1), KeyReused},
		{"409 duplicate request id", provAnswer(409, paypalDuplicateV1), KeyReused},
		{"422 declined", provAnswer(422, paypalDeclined), Refused},
		{"422 already captured", provAnswer(422, paypalCaptured), Refused},
		{"400 request id required", provAnswer(400, paypalNeedsID), Refused},
		{"429 rate limited", provAnswer(429, paypalRateLimited), RetryNotExecuted},
		{"500", provAnswer(500, paypalInternal), RetryMaybeExecuted},
		{"503", provAnswer(503, paypalUnavailable), RetryMaybeExecuted},
		{"not JSON 502", provAnswer(502, "Bad Gateway"), RetryMaybeExecuted},
		{"422 request id used, with links", provAnswer(422, paypalIDUsedLinked), KeyReused},
		{"400 request id too long", provAnswer(400, paypalTooLongID), Refused},
	})
}

func TestPayPalOperationStatus(t *testing.T) {
	order := func(status, captures string) string {
		return `{"id":"5O190127TN364715T","status":"` + status + `","purchase_units":[{"reference_id":"default","payments":{"captures":[` + captures + `]}}]}`
	}
	capture := func(status string) string { return `{"id":"3C679366HH908993F","status":"` + status + `"}` }
	checkStatuses(t, PayPal(), []statusCase{
		{"order completed, capture completed", order("COMPLETED", capture("COMPLETED")), OperationSucceeded},
		{"order completed, capture declined", order("COMPLETED", capture("DECLINED")), OperationFailed},
		{"order completed, capture pending", order("COMPLETED", capture("PENDING")), OperationPending},
		{"order completed, one paid one declined", order("COMPLETED", capture("COMPLETED")+","+capture("DECLINED")), OperationSucceeded},
		{"order completed, no payments", `{"id":"5O190127TN364715T","status":"COMPLETED"}`, OperationSucceeded},
		{"order completed, authorization denied",
			`{"status":"COMPLETED","purchase_units":[{"payments":{"authorizations":[{"status":"DENIED"}]}}]}`, OperationFailed},
		{"order voided", `{"id":"5O190127TN364715T","status":"VOIDED"}`, OperationCanceled},
		{"order approved, not captured yet", `{"id":"5O190127TN364715T","status":"APPROVED"}`, OperationPending},
		{"capture in a word no page lists", capture("ON_HOLD"), OperationUnknown},
		{"order completed, a capture in a word no page lists", order("COMPLETED", capture("ON_HOLD")+","+capture("DECLINED")), OperationUnknown},
		{"capture declined", capture("DECLINED"), OperationFailed},
		{"capture failed", capture("FAILED"), OperationFailed},
		{"capture pending", capture("PENDING"), OperationPending},
		{"capture refunded", capture("REFUNDED"), OperationSucceeded},
		{"authorization denied", `{"id":"0VF52814937998046","status":"DENIED"}`, OperationFailed},
		{"authorization voided", `{"id":"0VF52814937998046","status":"VOIDED"}`, OperationCanceled},
		{"authorization pending", `{"id":"0VF52814937998046","status":"PENDING"}`, OperationPending},
		{"not JSON", `ok`, OperationUnknown},
	})
}

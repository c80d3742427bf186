package dialect

import (
	"testing"
	"time"
)

// Adyen error bodies as the Checkout API sends them (adyenResponsesURL).
const (
	adyenInProgress = `{"status":422,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"}`
	adyenConflict   = `{"status":409,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"}`
	adyenStoreDown  = `{"status":503,"errorCode":"703","message":"Required resource temporarily unavailable","errorType":"internal"}`
	adyenValidation = `{"status":422,"errorCode":"14_030","message":"Return URL is missing.","errorType":"validation","pspReference":"8816178914079738"}`
	adyenSecurity   = `{"status":401,"errorCode":"000","message":"HTTP Status Response - Unauthorized","errorType":"security"}`
	adyenConfig     = `{"status":403,"errorCode":"901","message":"Invalid Merchant Account","errorType":"security"}`
	adyenInternal   = `{"status":500,"errorCode":"000","message":"An internal error happened","errorType":"internal"}`
	adyenFault      = `{"status":503,"message":"nothing was executed","errorType":"internal"}`
	adyenProblem    = `{"type":"https://docs.adyen.com/errors/unprocessable-entity","title":"Unprocessable entity","status":422,"detail":"The balance account is invalid.","errorCode":"00_422"}`
)

func TestAdyenFields(t *testing.T) {
	d := Adyen()
	if d.KeyHeader != "Idempotency-Key" || d.KeyField != "" || d.QuotedKey || d.ReplayHeader != "" {
		t.Errorf("key placement: header %q field %q quoted %v replay %q", d.KeyHeader, d.KeyField, d.QuotedKey, d.ReplayHeader)
	}
	if d.Retention != 7*24*time.Hour {
		t.Errorf("Retention = %s", d.Retention)
	}
	checkKeyLimit(t, d, 64)
}

func TestAdyenClassify(t *testing.T) {
	checkVerdicts(t, Adyen(), []verdictCase{
		{"200 authorised", provAnswer(200, `{"resultCode":"Authorised","pspReference":"993617895204576J"}`,
			"Idempotency-Key", "37ca9c97-d1d1-4c62-89e8-706891a563ed"), Success},
		{"201 capture received", provAnswer(201, `{"status":"received","pspReference":"993617895204576J"}`), Success},
		{"422 704 transient", provAnswer(422, adyenInProgress, "transient-error", "true"), InProgress},
		{"409 704 transient", provAnswer(409, adyenConflict, "Transient-Error", "TRUE"), InProgress},
		{"409 704 not transient", provAnswer(409, adyenConflict), Unresolvable},
		{"422 704 transient false", provAnswer(422, adyenInProgress, "transient-error", "false"), Unresolvable},
		{"503 703 transient", provAnswer(503, adyenStoreDown, "transient-error", "true"), RetryMaybeExecuted},
		{"503 703", provAnswer(503, adyenStoreDown), RetryMaybeExecuted},
		{"422 validation transient", provAnswer(422, adyenValidation, "transient-error", "true"), RetryMaybeExecuted},
		{"422 validation", provAnswer(422, adyenValidation), Refused},
		{"422 problem document", provAnswer(422, adyenProblem), Refused},
		{"401 security", provAnswer(401, adyenSecurity), Refused},
		{"403 configuration", provAnswer(403, adyenConfig), Refused},
		{"429", provAnswer(429, ""), RetryNotExecuted},
		// Not transient: stored as the key's final answer and replayed to
		// every resend, so a resend cannot tell.
		{"500 internal", provAnswer(500, adyenInternal), Unresolvable},
		{"500 internal transient", provAnswer(500, adyenInternal, "Transient-Error", "true"), RetryMaybeExecuted},
		{"503 internal transient", provAnswer(503, adyenFault, "Transient-Error", "true"), RetryMaybeExecuted},
		{"502 from a proxy, not Adyen's document", provAnswer(502, "Bad Gateway"), RetryMaybeExecuted},
		{"500 with no errorType", provAnswer(500, `{"status":500}`), RetryMaybeExecuted},
		{"numeric errorCode 704", provAnswer(422, `{"status":422,"errorCode":704}`, "transient-error", "true"), InProgress},
	})
}

func TestAdyenOperationStatus(t *testing.T) {
	rc := func(code string) string { return `{"pspReference":"993617895204576J","resultCode":"` + code + `"}` }
	checkStatuses(t, Adyen(), []statusCase{
		{"Authorised", rc("Authorised"), OperationSucceeded},
		{"PartiallyAuthorised", rc("PartiallyAuthorised"), OperationSucceeded},
		{"Received", rc("Received"), OperationPending},
		{"Pending", rc("Pending"), OperationPending},
		{"RedirectShopper", rc("RedirectShopper"), OperationPending},
		{"IdentifyShopper", rc("IdentifyShopper"), OperationPending},
		{"ChallengeShopper", rc("ChallengeShopper"), OperationPending},
		{"PresentToShopper", rc("PresentToShopper"), OperationPending},
		{"Refused", rc("Refused"), OperationFailed},
		{"Error", rc("Error"), OperationFailed},
		{"Cancelled", rc("Cancelled"), OperationCanceled},
		{"AuthenticationFinished", rc("AuthenticationFinished"), OperationSucceeded},
		{"no resultCode, status word", `{"status":"failed"}`, OperationFailed},
		{"modification received", `{"status":"received","pspReference":"993617895204576J"}`, OperationPending},
		{"resultCode the page does not list", rc("Expired"), OperationUnknown},
		{"empty resultCode", rc(""), OperationUnknown},
	})
}

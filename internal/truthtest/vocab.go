package truthtest

import (
	"net/http"
	"strings"
	"time"
)

// Dialects the scenarios speak, by the names of package dialect.
var dialectNames = []string{"draft", "stripe", "stripe-v2", "paypal", "adyen", "square"}

// interestingStatuses are the statuses the generator favours; any other
// status from 100 to 599 is drawn too.
var interestingStatuses = []int{
	200, 201, 202, 202, 202, 204, 303,
	301, 302, 304, 307, 308,
	400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 422, 425, 429,
	500, 501, 502, 503, 504, 505,
	100, 102, 103,
}

// drawStatus returns any status 100–599, weighted toward interesting ones.
func drawStatus(s Source) int {
	if chance(s, 3, 4) {
		return pick(s, interestingStatuses...)
	}
	return 100 + s.Intn(500)
}

// statusWords are the operation status words the polls use: the ones the
// dialects list, case variants, and many no dialect lists.
var statusWords = []string{
	// pending
	"pending", "processing", "running", "queued", "in_progress", "NotStarted", "scheduled",
	"accepted", "Received", "requires_payment_method", "requires_confirmation",
	// success
	"succeeded", "Succeeded", "SUCCEEDED", "completed", "COMPLETED", "requires_capture",
	"Authorised", "PartiallyAuthorised", "APPROVED",
	// failure
	"failed", "Failed", "canceled", "cancelled", "declined", "rejected", "aborted",
	"error", "Refused", "Error", "Cancelled", "DENIED", "VOIDED", "FAILED", "CANCELED",
	// listed by no dialect
	"expired", "denied", "refused", "timed_out", "reversed", "returned", "unknown",
	"blocked", "voided", "on_hold", "requires_action", "partially_failed",
	"REFUNDED", "PARTIALLY_REFUNDED", "CAPTURED", "PARTIALLY_CAPTURED",
	"", " ", "42", "ok", "done", "success", "settled", "paid", "refunded", "chargeback",
}

// normWord folds a status word the way providers' words differ in
// spelling: lower case, '-' and ' ' as '_'.
func normWord(w string) string {
	return strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(w)))
}

// wordTruth is what a provider's documentation says a status word proves
// about the effect, as this test reads the pages (independently of the
// client's code): +1 the work took effect, -1 it did not and will not,
// 0 nothing (pending, or a word the provider does not document). The
// server never says a word that contradicts its ledger.
func wordTruth(dialect, word string) int {
	w := normWord(word)
	switch w {
	case "succeeded", "completed":
		return +1
	case "failed", "canceled", "cancelled", "declined", "rejected", "aborted",
		"failure", "error", "errored":
		return -1
	}
	switch dialect {
	case "stripe":
		if w == "requires_capture" {
			return +1
		}
	case "adyen":
		switch w {
		case "authorised", "partiallyauthorised":
			return +1
		case "refused":
			return -1
		}
	case "paypal":
		switch w {
		// Capture REFUNDED and PARTIALLY_REFUNDED: the capture was made,
		// then money went back; authorization CAPTURED and
		// PARTIALLY_CAPTURED (https://developer.paypal.com/sdk/orders/v2/definitions/capture_status,
		// https://developer.paypal.com/api/payments/v2/definitions/authorization_status).
		case "refunded", "partially_refunded", "captured", "partially_captured":
			return +1
		case "denied", "voided":
			return -1
		}
	case "square":
		if w == "approved" {
			return +1
		}
	}
	return 0
}

// operationDoc is an operation document in the dialect's shape whose
// status is word.
func operationDoc(dialect, id, word string) string {
	switch dialect {
	case "adyen":
		return `{"pspReference":"` + id + `","resultCode":` + quote(word) + `}`
	case "square":
		return `{"payment":{"id":"` + id + `","status":` + quote(word) + `}}`
	}
	return `{"id":"` + id + `","status":` + quote(word) + `}`
}

// pendingWord is the dialect's documented word for work still running.
func pendingWord(dialect string) string {
	if dialect == "adyen" {
		return "Received"
	}
	return "processing"
}

// finalWord is the documented word a truthful final document uses.
func finalWord(dialect string, effect bool) string {
	switch {
	case dialect == "adyen" && effect:
		return "Authorised"
	case dialect == "adyen":
		return "Refused"
	case effect:
		return "succeeded"
	}
	return "failed"
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// retryAfterForms are every form of Retry-After, good and bad; the index
// is what a scenario stores, -1 meaning no header.
var retryAfterForms = []func(now time.Time) string{
	func(time.Time) string { return "0" },
	func(time.Time) string { return "1" },
	func(time.Time) string { return "3" },
	func(time.Time) string { return " 2 " },
	func(time.Time) string { return "-1" },
	func(time.Time) string { return "1.5" },
	func(time.Time) string { return "soon" },
	func(time.Time) string { return "" },
	func(time.Time) string { return "99999999999999999999" },
	func(now time.Time) string { return now.Add(-time.Hour).UTC().Format(http.TimeFormat) },
	func(now time.Time) string { return now.Add(2 * time.Second).UTC().Format(http.TimeFormat) },
	func(now time.Time) string { return now.Add(time.Second).UTC().Format(time.RFC850) },
	func(now time.Time) string { return now.Add(time.Second).UTC().Format(time.ANSIC) },
	func(time.Time) string { return "Fri, 31 Dec 9999 23:59:59 GMT" },
}

// drawRetryAfter returns a form index or -1.
func drawRetryAfter(s Source) int {
	if chance(s, 1, 2) {
		return -1
	}
	return s.Intn(len(retryAfterForms))
}

// body is one answer body with its content type.
type body struct {
	contentType, text string
}

const problemPrefix = "https://idemkit.github.io/idem/problems/"

// bodies are the answer bodies of every dialect: problem types of the
// draft profile, Stripe, PayPal, Adyen and Square errors, and junk.
var bodies = []body{
	{"", ""},
	{"text/plain", "nope"},
	{"text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"},
	{"application/problem+json", `{"type":"` + problemPrefix + `key-reused","title":"key reused","status":422}`},
	{"application/problem+json", `{"type":"` + problemPrefix + `invalid-key","title":"invalid key","status":400}`},
	{"application/problem+json", `{"type":"` + problemPrefix + `missing-key","title":"missing key","status":400}`},
	{"application/problem+json", `{"type":"` + problemPrefix + `in-progress","title":"in progress","status":409}`},
	{"application/problem+json", `{"type":"` + problemPrefix + `store-unavailable","title":"store unavailable","status":503}`},
	{"application/problem+json", `{"title":"something"}`},
	{"application/problem+json", `{"type":"https://example.com/probs/insufficient-funds","title":"no money"}`},
	{"application/json", `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters"}}`},
	{"application/json", `{"error":{"type":"api_error","code":"idempotency_key_in_use"}}`},
	{"application/json", `{"error":{"type":"api_error","code":"lock_timeout"}}`},
	{"application/json", `{"error":{"type":"card_error","code":"card_declined"}}`},
	{"application/json", `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"PREVIOUS_REQUEST_IN_PROGRESS"}]}`},
	{"application/json", `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"DUPLICATE_REQUEST_ID"}]}`},
	{"application/json", `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED"}]}`},
	{"application/json", `{"status":422,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"}`},
	{"application/json", `{"status":500,"errorCode":"000","message":"internal error","errorType":"internal"}`},
	{"application/json", `{"errors":[{"category":"API_ERROR","code":"TEMPORARY_ERROR"}]}`},
	{"application/json", `{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]}`},
	{"application/json", `{"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]}`},
	{"application/json", `{`},
	{"application/problem+json", `not json at all`},
}

// headerSets are extra answer headers some dialects read.
var headerSets = []http.Header{
	nil,
	{"Stripe-Should-Retry": {"true"}},
	{"Stripe-Should-Retry": {"false"}},
	{"Transient-Error": {"true"}},
	{"Idempotent-Replayed": {"true"}},
}

// provesNotExecutedNow reports whether an answer with this status, body and
// headers tells the client that this attempt was not executed (408, 425,
// 429, 503 /store-unavailable): the server never sends one for an attempt
// it executed.
func provesNotExecutedNow(status int, b body) bool {
	switch status {
	case 408, 425, 429:
		return true
	case 503:
		return strings.Contains(b.text, "store-unavailable")
	}
	return false
}

// provesKeyRefused reports whether an answer says the key itself was
// refused (400 /missing-key or /invalid-key): the server never sends one
// for a key it executed.
func provesKeyRefused(status int, b body) bool {
	return status == 400 && (strings.Contains(b.text, "invalid-key") || strings.Contains(b.text, "missing-key"))
}

// provesKeyReused reports whether an answer's body says the key belongs
// to another payload (the draft's /key-reused, Stripe's idempotency_error,
// PayPal's and Square's codes): a claim that this payload was not
// executed under it, which the server never makes of an attempt it
// executed.
func provesKeyReused(b body) bool {
	for _, s := range []string{"key-reused", "idempotency_error", "DUPLICATE_REQUEST_ID", "PAYPAL_REQUEST_ID_PREVIOUSLY_USED", "IDEMPOTENCY_KEY_REUSED"} {
		if strings.Contains(b.text, s) {
			return true
		}
	}
	return false
}

package dialect

import (
	"strconv"
	"strings"
	"testing"
)

// documentedWords are, per shipped dialect, the status words its
// OperationStatus reads as a verdict or as pending (the words its
// provider's pages list, and Draft's, which every dialect falls back to).
// A dialect missing here fails TestUnknownStatusWordIsNoVerdict, so a new
// dialect is tested as soon as it ships.
var documentedWords = map[string][]string{
	"draft": draftWords,
	"stripe": append([]string{"requires_payment_method", "requires_confirmation",
		"requires_action", "requires_capture"}, draftWords...),
	"stripe-v2": draftWords,
	// PayPal reads a status by its own pages only, never by Draft's words.
	"paypal": {"VOIDED", "DENIED", "DECLINED", "FAILED", "PENDING", "CREATED", "SAVED",
		"APPROVED", "PAYER_ACTION_REQUIRED", "COMPLETED", "REFUNDED", "PARTIALLY_REFUNDED",
		"CAPTURED", "PARTIALLY_CAPTURED"},
	"adyen": append([]string{"Authorised", "PartiallyAuthorised", "AuthenticationFinished",
		"AuthenticationNotRequired", "Received", "Pending", "RedirectShopper", "IdentifyShopper",
		"ChallengeShopper", "PresentToShopper", "Refused", "Error", "Cancelled"}, draftWords...),
	"square": append([]string{"PENDING", "COMPLETED", "APPROVED", "FAILED", "REJECTED", "CANCELED"},
		draftWords...),
	"checkout": append([]string{"Authorized", "Captured", "Card Verified", "Declined", "Pending"},
		draftWords...),
	"shopify": draftWords,
}

// draftWords are the words StatusWord lists.
var draftWords = []string{"pending", "processing", "running", "queued", "in_progress", "inprogress",
	"accepted", "notstarted", "not_started", "scheduled", "succeeded", "failed", "canceled"}

// undocumentedWords are words a provider might send that read like a
// verdict: the ones seen in the field, near misses of documented words,
// and every dialect's documented words, which another dialect must not
// take for its own.
func undocumentedWords() []string {
	words := []string{"expired", "denied", "refused", "timed_out", "reversed", "returned",
		"unknown", "blocked", "voided", "on_hold", "requires_action", "partially_failed",
		"success", "successful", "succeed", "succeeded!", "paid", "settled", "done", "ok", "true",
		"complete", "completed", "authorized", "authorised", "captured", "approved", "declined",
		"rejected", "error", "cancelled", "aborted", "chargeback", "disputed", "null", "0", "1",
		"", " ", "\u00a0succeeded", "succeeded\x00", "ｓucceeded"}
	for _, ws := range documentedWords {
		words = append(words, ws...)
	}
	return words
}

// statusDocs are the operation documents a dialect reads a status word
// from; every dialect reads Draft's two shapes.
func statusDocs(name, word string) []string {
	q := strconv.Quote(word)
	docs := []string{`{"status":` + q + `}`, `{"done":true,"status":` + q + `}`, `{"id":"op_1","status":` + q + `,"amount":100}`}
	switch name {
	case "adyen":
		docs = append(docs, `{"pspReference":"p1","resultCode":`+q+`}`)
	case "square":
		docs = append(docs, `{"payment":{"id":"p1","status":`+q+`}}`, `{"refund":{"id":"r1","status":`+q+`}}`)
	case "paypal":
		docs = append(docs,
			`{"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":`+q+`}]}}]}`,
			`{"status":"COMPLETED","purchase_units":[{"payments":{"authorizations":[{"status":`+q+`}]}}]}`,
			`{"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":"DECLINED"},{"status":`+q+`}]}}]}`)
	}
	return docs
}

// folded is a word as the most lenient dialect compares it (StatusWord's
// folding), so a word that any dialect could read as documented in some
// spelling is left out of its undocumented set.
func folded(w string) string { return strings.ToUpper(foldWord(w)) }

// TestUnknownStatusWordIsNoVerdict: for every shipped dialect, a status
// word its provider does not document is OperationUnknown in every shape
// of operation document the dialect reads: never success, failure,
// cancellation, nor pending. The client then keeps the intent unsettled
// and answers ErrOutcomeUnknown (internal/truthtest's
// TestTruthRegression_UnknownStatusWord plays that through a client).
func TestUnknownStatusWordIsNoVerdict(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			d, err := ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			listed, ok := documentedWords[name]
			if !ok {
				t.Fatalf("dialect %q has no entry in documentedWords: list the status words its provider documents", name)
			}
			skip := make(map[string]bool)
			for _, w := range listed {
				skip[folded(w)] = true
			}
			tried := 0
			for _, w := range undocumentedWords() {
				if skip[folded(w)] {
					continue
				}
				for _, doc := range statusDocs(name, w) {
					tried++
					if got := d.OperationStatus([]byte(doc)); got != OperationUnknown {
						t.Errorf("%s reads %s as %s: an undocumented word must be %s", name, doc, got, OperationUnknown)
					}
				}
			}
			if tried < 60 {
				t.Errorf("only %d documents tried", tried)
			}
		})
	}
}

// TestDocumentedWordsAreRead: the documented words above are the ones
// the dialects read, so the undocumented set is not empty by mistake
// (a documented word read as unknown is listed here in error).
func TestDocumentedWordsAreRead(t *testing.T) {
	if len(Names()) < 8 {
		t.Fatalf("%d shipped dialects, want at least 8: %v", len(Names()), Names())
	}
	for name, words := range documentedWords {
		d, err := ByName(name)
		if err != nil {
			t.Fatalf("documentedWords names %q: %v", name, err)
		}
		for _, w := range words {
			read := false
			for _, doc := range statusDocs(name, w) {
				if d.OperationStatus([]byte(doc)) != OperationUnknown {
					read = true
				}
			}
			if !read {
				t.Errorf("%s: %q is listed as documented but no document reads it", name, w)
			}
		}
	}
}

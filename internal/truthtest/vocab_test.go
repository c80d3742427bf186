package truthtest

import (
	"testing"

	"github.com/idemkit/idem/dialect"
)

// The test's own reading of the providers' pages (wordTruth) and the
// client's (each dialect's OperationStatus) must never disagree on a
// verdict: a word the client takes as proof that the test reads as saying
// nothing lets the scripted server say it against its ledger and report
// the client for believing it (a PayPal "refunded" did); a word both read
// as proofs of opposite outcomes is a misreading on one side.
func TestWordTruthAgreesWithEveryDialectVerdict(t *testing.T) {
	for _, name := range dialectNames {
		d := dialectNamed(name)
		for _, word := range statusWords {
			got := d.OperationStatus([]byte(operationDoc(name, "op_1", word)))
			truth := wordTruth(name, word)
			switch got {
			case dialect.OperationSucceeded:
				if truth != +1 {
					t.Errorf("%s: the client reads %q as succeeded, the test's reading of the pages as %+d", name, word, truth)
				}
			case dialect.OperationFailed, dialect.OperationCanceled:
				if truth != -1 {
					t.Errorf("%s: the client reads %q as %s, the test's reading of the pages as %+d", name, word, got, truth)
				}
			}
		}
	}
}

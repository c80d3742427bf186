package checkpeers_test

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// peer is a graded server as its proofs see it: its book, and whether it
// keeps one key space per caller.
type peer struct {
	book *ledger.Book
	// scoped: a key belongs to its caller (false: one key space for all).
	scoped bool
}

// The principals `idem check` sends when given none: bearer tokens with
// these prefixes and a part random to the run.
const (
	firstPrincipal  = "conformance-a-"
	secondPrincipal = "conformance-b-"
)

// passProofs prove a PASS from the server's own book: what ran, under
// which caller and key, and how each answer was sent. A PASS without a
// proof here fails the test: no proof, no verdict.
var passProofs = map[string]func(peer) error{
	idemtest.CheckFirstRequest: func(p peer) error {
		for _, e := range p.book.Effects() {
			if strings.HasPrefix(e.Principal, firstPrincipal) {
				return nil
			}
		}
		return errors.New("no payment of the checker's first principal ran")
	},
	idemtest.CheckValidKeys: func(p peer) error {
		ran := map[int]bool{}
		for _, e := range p.book.Effects() {
			ran[len(e.Key)] = true
		}
		if !ran[1] || !ran[36] || !ran[255] {
			return fmt.Errorf("keys of 1, 36 and 255 characters should each have run a payment; lengths that ran: %v", ran)
		}
		return nil
	},
	idemtest.CheckReplay: oneEffectPerKey,
	idemtest.CheckKeyReuse: func(p peer) error {
		return errors.Join(oneEffectPerKey(p), answered(p, http.StatusUnprocessableEntity))
	},
	idemtest.CheckQuotedKey: func(p peer) error {
		for _, e := range p.book.Effects() {
			if strings.HasPrefix(e.Key, `"`) {
				return fmt.Errorf("a payment ran under the key %q, quotes kept", e.Key)
			}
		}
		return oneEffectPerKey(p)
	},
	idemtest.CheckConcurrent: oneEffectPerKey,
	idemtest.CheckInProgress: func(p peer) error { return answered(p, http.StatusConflict) },
	idemtest.CheckPrincipalScope: func(p peer) error {
		for key, principals := range principalsByKey(p) {
			if key != "" && principals[firstPrincipal] && principals[secondPrincipal] {
				return nil
			}
		}
		return errors.New("no key ran a payment for each of the checker's two principals")
	},
	idemtest.CheckProblemDetails: func(p peer) error {
		errs := 0
		for _, a := range p.book.Answers() {
			if a.Status >= 400 {
				errs++
				if !isProblem(a) {
					return fmt.Errorf("a %d answer went as %q", a.Status, a.ContentType)
				}
			}
		}
		if errs == 0 {
			return errors.New("no error answer was sent")
		}
		return nil
	},
}

// oneEffectPerKey: no key ran twice in its key space.
func oneEffectPerKey(p peer) error {
	seen := map[[2]string]string{}
	for _, e := range p.book.Effects() {
		if e.Key == "" {
			continue
		}
		space := [2]string{"", e.Key}
		if p.scoped {
			space[0] = e.Principal
		}
		if first, ok := seen[space]; ok {
			return fmt.Errorf("the key %q ran twice: %s and %s", e.Key, first, e.PaymentID)
		}
		seen[space] = e.PaymentID
	}
	return nil
}

// answered: the server sent at least one answer with status.
func answered(p peer, status int) error {
	if countAnswers(p, func(a ledger.Answer) bool { return a.Status == status }) == 0 {
		return fmt.Errorf("the server never answered %d", status)
	}
	return nil
}

// neverAnswered: the server sent no answer with status.
func neverAnswered(p peer, status int) error {
	if n := countAnswers(p, func(a ledger.Answer) bool { return a.Status == status }); n > 0 {
		return fmt.Errorf("the server answered %d %d times", status, n)
	}
	return nil
}

func countAnswers(p peer, match func(ledger.Answer) bool) int {
	n := 0
	for _, a := range p.book.Answers() {
		if match(a) {
			n++
		}
	}
	return n
}

// principalsByKey maps each key to the principal prefixes it ran under.
func principalsByKey(p peer) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, e := range p.book.Effects() {
		if out[e.Key] == nil {
			out[e.Key] = map[string]bool{}
		}
		for _, prefix := range []string{firstPrincipal, secondPrincipal} {
			if strings.HasPrefix(e.Principal, prefix) {
				out[e.Key][prefix] = true
			}
		}
	}
	return out
}

func isProblem(a ledger.Answer) bool {
	mt, _, err := mime.ParseMediaType(a.ContentType)
	return err == nil && mt == "application/problem+json"
}

// gap is a FAIL that the graded server's code makes: where its source
// does it, and, where the book can show it, a proof that it did.
type gap struct {
	source string
	proof  func(peer) error // nil: the source line is the whole proof
}

// assertTrue checks every verdict of run against the server: a PASS must
// be proven from its book, a FAIL must be one of its named gaps (and
// shown in its book where the gap has a proof), a SKIP must be expected.
// A named gap whose check passed is a false name.
func assertTrue(t *testing.T, run checkRun, p peer, gaps map[string]gap, skips map[string]string) {
	t.Helper()
	for _, r := range run.report.Checks {
		switch {
		case r.Skipped:
			if _, ok := skips[r.ID]; !ok {
				t.Errorf("%s skipped, which this server should not make it: %s", r.ID, r.Detail)
			}
		case r.Passed:
			if _, named := gaps[r.ID]; named {
				t.Errorf("%s passed, but it is named as a gap of this server (%s): %s", r.ID, gaps[r.ID].source, r.Detail)
			}
			proof, ok := passProofs[r.ID]
			if !ok {
				t.Errorf("%s passed, and no proof from the server's book says it should: %s", r.ID, r.Detail)
				continue
			}
			if err := proof(p); err != nil {
				t.Errorf("%s passed, but the server's book disproves it: %v (detail: %s)", r.ID, err, r.Detail)
			}
		default:
			g, ok := gaps[r.ID]
			if !ok {
				t.Errorf("%s failed, which is no named gap of this server: %s", r.ID, r.Detail)
				continue
			}
			if g.proof != nil {
				if err := g.proof(p); err != nil {
					t.Errorf("%s failed as the gap %q, but the server's book does not show it: %v", r.ID, g.source, err)
				}
			}
		}
	}
}

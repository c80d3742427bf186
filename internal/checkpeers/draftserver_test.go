package checkpeers_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/checkpeers/draftserver"
	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// TestDraftServer grades the server written from draft-07's text twice at
// the draft level: the same verdicts each time, every check passed and
// proven from the server's book. Keys go quoted, the Structured Field
// String the draft defines (a bare key is no String, so this server takes
// it for a missing key).
func TestDraftServer(t *testing.T) {
	book := &ledger.Book{}
	srv := httptest.NewServer(draftserver.New(book))
	t.Cleanup(srv.Close)
	run := twice(t, srv.URL, "--profile", idemtest.ProfileDraft, "--key-form", idemtest.KeyFormQuoted,
		"--slow-header", ledger.DelayHeader+": 300ms")
	if run.exit != 0 {
		t.Errorf("exit %d, want 0: the draft server follows the draft", run.exit)
	}
	assertTrue(t, run, peer{book: book, scoped: true}, nil, nil)
}

// TestDraftServerTakesABareKeyForNone: a bare key is no Structured Field
// String, so the draft server answers it as a missing key, and `idem
// check` without --key-form quoted cannot grade it.
func TestDraftServerTakesABareKeyForNone(t *testing.T) {
	book := &ledger.Book{}
	srv := httptest.NewServer(draftserver.New(book))
	t.Cleanup(srv.Close)
	run := idemCheck(t, srv.URL, "--key-form", idemtest.KeyFormBare)
	if run.exit != 1 || len(run.report.Checks) == 0 {
		t.Fatalf("exit %d with %d checks, want 1 and a failed first request", run.exit, len(run.report.Checks))
	}
	first := run.report.Checks[0]
	if first.ID != idemtest.CheckFirstRequest || first.Passed || !strings.Contains(first.Detail, "400 /idempotency#missing-key") {
		t.Errorf("first check %s: %s; want the first request refused 400 as a missing key", verdict(first), first.Detail)
	}
	if n := len(book.Effects()); n != 0 {
		t.Errorf("%d payments ran under bare keys, want none", n)
	}
}

package checkpeers_test

import (
	"net/http/httptest"
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

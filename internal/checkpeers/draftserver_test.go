package checkpeers_test

import (
	"net/http/httptest"
	"testing"

	"github.com/idemkit/idem/internal/checkpeers/draftserver"
	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

func TestDraftServer(t *testing.T) {
	book := &ledger.Book{}
	srv := httptest.NewServer(draftserver.New(book))
	t.Cleanup(srv.Close)
	run := twice(t, srv.URL, "--key-form", "quoted", "--slow-header", ledger.DelayHeader+": 300ms")
	t.Logf("exit %d", run.exit)
}

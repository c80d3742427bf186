package checkpeers_test

import (
	"net"
	"testing"

	"github.com/idemkit/idem/internal/checkpeers/fiberpay"
	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// serveFiber serves the Fiber payments app on a real listener for the
// test and returns its base URL.
func serveFiber(t *testing.T, book *ledger.Book) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := fiberpay.New(book)
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln) }()
	t.Cleanup(func() {
		if err := app.Shutdown(); err != nil {
			t.Errorf("shutting Fiber down: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Fiber's listener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func TestFiberIdempotency(t *testing.T) {
	book := &ledger.Book{}
	url := serveFiber(t, book)
	run := twice(t, url, "--key-format", "uuid", "--slow-header", ledger.DelayHeader+": 300ms")
	t.Logf("exit %d", run.exit)
}

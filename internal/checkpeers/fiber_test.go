package checkpeers_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/checkpeers/fiberpay"
	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// fiberGaps are the gaps of Fiber v2.52.15's idempotency middleware, each
// traced to the line of its source (in the module cache, under
// github.com/gofiber/fiber/v2@v2.52.15) that makes it: `idem check` may
// fail the Fiber app on these checks and on no other. Paths are relative
// to middleware/idempotency unless they name another directory.
var fiberGaps = map[string]gap{
	// The default KeyHeaderValidate refuses every key whose length is not
	// 36 (config.go:61-67: "if l, wl := len(k), 36; l != wl"); the
	// middleware returns that error as it is (idempotency.go:83-85), and
	// Fiber's DefaultErrorHandler answers an error that is no *fiber.Error
	// with 500 text/plain (app.go:477-485).
	idemtest.CheckValidKeys: {
		source: "config.go:61-67 keys of 36 characters only, refused with 500 (idempotency.go:83-85, app.go:477-485)",
		proof: func(p peer) error {
			for _, e := range p.book.Effects() {
				if e.Key != "" && len(e.Key) != 36 {
					return fmt.Errorf("a key of %d characters ran", len(e.Key))
				}
			}
			return answered(p, 500)
		},
	},
	// No fingerprint: the stored answer is looked up by the key alone
	// (idempotency.go:40 cfg.Storage.Get(key), called at 88 and 104), so
	// another body under a used key gets the first answer replayed.
	idemtest.CheckKeyReuse: {
		source: "idempotency.go:40,88,104 the stored answer is found by the key alone: no fingerprint, never 422",
		proof: func(p peer) error {
			return errors.Join(neverAnswered(p, 422), oneEffectPerKey(p))
		},
	},
	// A duplicate while the original runs waits on the key's lock
	// (idempotency.go:94, locker.go:24-37) and then gets the stored answer
	// (idempotency.go:104): lock-and-wait, never 409.
	idemtest.CheckInProgress: {
		source: "idempotency.go:94 and locker.go:24-37 a duplicate waits on the key's lock, then gets the stored answer: never 409",
		proof:  func(p peer) error { return neverAnswered(p, 409) },
	},
	// Keys are not scoped by caller: the storage key is the header's
	// value alone (idempotency.go:77, 145), so a second caller sending the
	// same key gets the first caller's payment.
	idemtest.CheckPrincipalScope: {
		source: "idempotency.go:77,145 the storage key is the header value alone: one key space for every caller",
		proof: func(p peer) error {
			for key, principals := range principalsByKey(p) {
				if key != "" && principals[firstPrincipal] && principals[secondPrincipal] {
					return fmt.Errorf("the key %q ran for both principals", key)
				}
			}
			return nil
		},
	},
	// A refused key is Fiber's DefaultErrorHandler answer, 500 text/plain
	// (app.go:477-485), not a problem document.
	idemtest.CheckProblemDetails: {
		source: "app.go:477-485 a refused key is answered 500 text/plain by Fiber's default error handler",
		proof: func(p peer) error {
			if countAnswers(p, func(a ledger.Answer) bool { return a.Status >= 400 && !isProblem(a) }) == 0 {
				return errors.New("every error answer was a problem document")
			}
			return nil
		},
	},

	// The idem profile's checks, this project's rules:

	// No key, no idempotency: the middleware passes the request on
	// (idempotency.go:78-80), which runs.
	idemtest.CheckMissingKey: {
		source: "idempotency.go:78-80 a request without a key runs unguarded",
		proof:  ranWithoutKey,
	},
	// An empty key runs unguarded (idempotency.go:78-80); a key of 36
	// characters is taken whatever they are, spaces included
	// (config.go:61-67 checks the length only); a long one is a 500.
	idemtest.CheckInvalidKey: {
		source: "idempotency.go:78-80 and config.go:61-67 an empty key runs unguarded, any 36 characters are a key, others a 500",
		proof: func(p peer) error {
			for _, e := range p.book.Effects() {
				if strings.ContainsAny(e.Key, " \t") {
					return ranWithoutKey(p)
				}
			}
			return errors.New("no key with white space ran")
		},
	},
	// Every answer the handler writes is stored, errors included
	// (idempotency.go:116-145); only an error the handler returns is not
	// (111-114). draft-07 §2.6 allows it; this project's rule does not.
	idemtest.CheckErrorNotStored: {source: "idempotency.go:116-145 every answer the handler writes is stored, a 400 included"},
	// A replay carries the stored headers only; that it is one is told to
	// the handler chain through a Locals value (idempotency.go:22-24, 62),
	// never to the client.
	idemtest.CheckReplayHeader: {source: "idempotency.go:22-24,62 a replay is marked in Locals only, no Idempotent-Replayed"},
	// Error answers are Fiber's text/plain (app.go:477-485): no type.
	idemtest.CheckProblemTypes: {source: "app.go:477-485 error answers are text/plain, without a problem type"},
	// The key alone finds the stored answer (idempotency.go:40): another
	// query string under a used key gets the first answer.
	idemtest.CheckRequestTarget: {source: "idempotency.go:40 the stored answer is found by the key alone, whatever the request target"},
}

// fiberSkips are the checks `idem check` cannot judge against Fiber.
var fiberSkips = map[string]string{
	// Fiber never answers 409 (see the in-progress gap).
	idemtest.CheckRetryAfter: "no 409 to judge",
}

// ranWithoutKey: a payment ran with no key.
func ranWithoutKey(p peer) error {
	for _, e := range p.book.Effects() {
		if e.Key == "" {
			return nil
		}
	}
	return errors.New("no payment ran without a key")
}

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

// TestFiberIdempotency grades the Fiber app twice at each profile: the
// same verdicts each time, every FAIL a named gap of Fiber's middleware,
// every PASS proven from the app's book. Keys are UUIDs, the 36
// characters Fiber's default validator wants.
func TestFiberIdempotency(t *testing.T) {
	for _, profile := range []string{idemtest.ProfileDraft, idemtest.ProfileIdem} {
		t.Run(profile, func(t *testing.T) {
			book := &ledger.Book{}
			url := serveFiber(t, book)
			run := twice(t, url, "--profile", profile, "--key-format", idemtest.KeyFormatUUID,
				"--slow-header", ledger.DelayHeader+": 300ms")
			if run.exit != 1 {
				t.Errorf("exit %d, want 1: Fiber's gaps fail checks", run.exit)
			}
			assertTrue(t, run, peer{book: book, scoped: false}, fiberGaps, fiberSkips)
		})
	}
}

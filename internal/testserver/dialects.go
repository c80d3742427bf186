package testserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultDialect names the dialect the server speaks unless told
// otherwise: this project's protocol (the IETF draft with problem+json).
const DefaultDialect = "idem"

// Dialect is the wire vocabulary of one idempotency implementation: where
// the key travels, its limits, how each protocol answer is written and
// which answers are final. The protocol core (reservation, fencing,
// leases, stores) is the same for every dialect; only what the client sees
// changes, through package server's key and answer options. Get one with
// LookupDialect: the answer writers are built in, so a Dialect assembled
// by hand has none.
type Dialect struct {
	// Name is how the dialect is chosen (--dialect, WithServerDialect).
	Name string
	// KeyHeader names the request header that carries the key; empty when
	// the key travels in the body (KeyField).
	KeyHeader string
	// KeyField names the top-level member of a JSON object body that
	// carries the key; empty for header dialects. The member is removed
	// before the body is fingerprinted and handed to the handler.
	KeyField string
	// MaxKeyLength is the longest key accepted: in characters for a
	// header, in bytes for a body field.
	MaxKeyLength int
	// RequireKey refuses a request without a key. Otherwise such a request
	// runs unguarded: every retry executes again, as the provider does.
	RequireKey bool
	// Retention is how long a completed key is replayed when the server is
	// not told otherwise; 0 leaves the server's default.
	Retention time.Duration
	// Store5xx makes a handler's 5xx final and replayed when the server is
	// not told otherwise (a 503 never is, see WithStore5xx).
	Store5xx bool
	// ReplayMismatch answers a completed key sent with another payload
	// with the stored response instead of a key-reuse error, for providers
	// documented to return the first request's result for the key alone.
	ReplayMismatch bool

	// parseKey reads the key header values; nil means plainHeaderKey.
	parseKey func(d *Dialect, values []string) (string, error)
	// echoKey copies the accepted key onto every answer, in KeyHeader.
	echoKey bool
	// formBodies makes the API take application/x-www-form-urlencoded
	// bodies as well as JSON, as the provider's API does.
	formBodies bool
	// paymentDoc shapes a payment as the provider's API shows it, in the
	// answer to its creation and to GET /v1/payments/{id}; nil shows the
	// reference API's Payment. The list keeps the reference API's shape.
	paymentDoc func(Payment) any
	// objectFields are members of the provider's payment request that the
	// reference API has no use for: accepted when they hold a JSON object,
	// and otherwise ignored (Checkout.com's source).
	objectFields []string

	missingKey       func(w http.ResponseWriter, err error)
	invalidKey       func(w http.ResponseWriter, err error)
	inProgress       func(w http.ResponseWriter, retryAfter time.Duration)
	keyReused        func(w http.ResponseWriter)
	storeUnavailable func(w http.ResponseWriter)
	// replayed marks a replayed answer and returns the status to send.
	replayed func(h http.Header, status int) int
	// problemAs, when set, turns every problem document of the API into
	// the provider's error document for the problem's status.
	problemAs func(status int, p Problem) any
	// wrapAPI, when set, wraps the whole API (admin paths included, which
	// it must pass through untouched): for what a provider adds to every
	// answer, such as a request id.
	wrapAPI func(http.Handler) http.Handler
}

// builtinDialects returns every dialect the server speaks, sorted by
// name. A function rather than a table so that each provider's file
// defines its own value and no package-level initialisation order matters.
func builtinDialects() []Dialect {
	return []Dialect{adyenDialect(), checkoutDialect(), idemDialect(), paypalDialect(), squareDialect(), stripeDialect(), stripeV2Dialect()}
}

// DialectNames returns the names LookupDialect accepts, sorted.
func DialectNames() []string {
	all := builtinDialects()
	names := make([]string, 0, len(all))
	for _, d := range all {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// LookupDialect returns the dialect called name. An unknown name is an
// error that lists the known ones.
func LookupDialect(name string) (Dialect, error) {
	for _, d := range builtinDialects() {
		if d.Name == name {
			return d, nil
		}
	}
	return Dialect{}, fmt.Errorf("unknown dialect %q (known: %s)", name, strings.Join(DialectNames(), ", "))
}

// noReplayMarker leaves a replay looking like the first answer, for
// providers that document no replay marker.
func noReplayMarker(_ http.Header, status int) int { return status }

// writeJSONError answers status with v as an application/json document,
// the error shape of the providers' own APIs.
func writeJSONError(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v) // the error types marshal without fail
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

package truthtest

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
)

// An operation status word its dialect does not document proves nothing:
// the intent must stay unsettled, not Succeeded, when the operation made no
// payment. Played for every shipped dialect whose answers can accept an
// operation (a 202 with a Location); the others never poll one.
func TestTruthRegression_UnknownStatusWord(t *testing.T) {
	words := []string{"expired", "denied", "refused", "timed_out", "reversed", "returned",
		"unknown", "blocked", "voided", "on_hold", "requires_action", "partially_failed"}
	polled := 0
	for _, d := range dialect.Names() {
		if !acceptsOperations(dialectNamed(d)) {
			continue
		}
		polled++
		for _, w := range words {
			if wordTruth(d, w) != 0 || dialectNamed(d).OperationStatus([]byte(operationDoc(d, "op", w))) != dialect.OperationUnknown {
				continue // documented by this dialect
			}
			t.Run(d+"/"+w, func(t *testing.T) {
				expectUnsettled(t, d, w)
				expectTrue(t, Scenario{
					Dialect: d, MaxAttempts: 1,
					Moves: []Move{accepted(false)},
					Polls: []Poll{{Kind: PollDoc, Status: 200, Word: w, RetryAfter: -1}},
					Steps: []Step{{Kind: StepNew}},
				})
			})
		}
	}
	if polled < 7 {
		t.Errorf("%d dialects accept operations, want at least 7 of %v", polled, dialect.Names())
	}
}

// expectUnsettled plays one accepted payment whose operation answers word
// through a client speaking dialect d: the intent must stay Accepted
// (unsettled) and Do's error match ErrOutcomeUnknown.
func expectUnsettled(t *testing.T, d, word string) {
	t.Helper()
	srv := NewServer(d, 0, 0, []Move{accepted(false)},
		[]Poll{{Kind: PollDoc, Status: 200, Word: word, RetryAfter: -1}})
	defer srv.Close()
	client, err := idem.New(idem.WithDialect(dialectNamed(d)), idem.WithMaxAttempts(1),
		idem.WithPolling(time.Millisecond, 5*time.Second), idem.WithRetryAfterCeiling(3*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.Main.URL+"/v1/payments",
		strings.NewReader(`{"intent":"order-0","amount":1000,"currency":"EUR"}`))
	req.Header.Set("Content-Type", "application/json")
	if d == "adyen" {
		req.Header.Set("X-API-Key", "tok_"+theAccount+"_v1_s")
	} else {
		req.Header.Set("Authorization", "Bearer tok_"+theAccount+"_v1_s")
	}
	in, err := client.Begin(t.Context(), "order-0", req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(t.Context(), in)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Errorf("%s, word %q: Do = %v, want ErrOutcomeUnknown", d, word, err)
	}
	if in.State != idem.Accepted {
		t.Errorf("%s, word %q: intent %s, want %s (unsettled)", d, word, in.State, idem.Accepted)
	}
	if n := srv.Effects(theAccount, in.Key); n != 0 {
		t.Errorf("%s: %d effects, want 0", d, n)
	}
}

// acceptsOperations reports whether d reads a 202 with a Location as an
// accepted operation to poll.
func acceptsOperations(d dialect.Dialect) bool {
	return d.Classify(dialect.Answer{Method: http.MethodPost, Status: http.StatusAccepted,
		Header: http.Header{"Location": {"/v1/operations/op_1"}}}) == dialect.Accepted
}

// Adyen: a resultCode Adyen does not list, even one that reads as "still
// running" elsewhere, is no success.
func TestTruthRegression_AdyenUnlistedResultCode(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "adyen", MaxAttempts: 1,
		Moves: []Move{accepted(false)},
		Polls: []Poll{{Kind: PollDoc, Status: 200, Word: "processing", RetryAfter: -1}},
		Steps: []Step{{Kind: StepNew}},
	})
}

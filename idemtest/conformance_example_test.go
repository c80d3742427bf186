package idemtest_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemkit/idem/idemtest"
)

// RunConformance checks any server that claims to honour Idempotency-Key;
// here, the reference server. In a test, idemtest.Conformance(t, url,
// opts) reports each check as a subtest instead.
func ExampleRunConformance() {
	srv, err := idemtest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	// ConformanceOptions lets the checker slow this server down so the
	// in-progress check always sees a 409. For another server, fill the
	// options by hand: endpoint, body, principals.
	opts := srv.ConformanceOptions()
	opts.Concurrency = 5
	opts.Profile = idemtest.ProfileIdem // this project's vocabulary too
	results, err := idemtest.RunConformance(context.Background(), srv.URL, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%-22s %-6s passed=%v\n", r.ID, r.Level, r.Passed)
	}
	// Output:
	// first-request          SHOULD passed=true
	// valid-keys             idem   passed=true
	// replay                 SHOULD passed=true
	// key-reuse              SHOULD passed=true
	// missing-key            idem   passed=true
	// invalid-key            idem   passed=true
	// quoted-key             MUST   passed=true
	// concurrent-duplicates  SHOULD passed=true
	// in-progress            SHOULD passed=true
	// principal-scope        idem   passed=true
	// error-not-stored       idem   passed=true
	// problem-details        idem   passed=true
	// replay-header          idem   passed=true
	// problem-types          idem   passed=true
	// retry-after            idem   passed=true
	// request-target         idem   passed=true
}

// Checking a server of your own: its endpoint, a body template, and two
// principals for the scoping check.
func ExampleConformanceOptions() {
	opts := idemtest.ConformanceOptions{
		Endpoint: "/v1/orders",
		Body: func(i int) []byte {
			return fmt.Appendf(nil, `{"sku":"book","quantity":1,"note":"conformance %d"}`, i)
		},
		Header:          http.Header{"Authorization": {"Bearer test-tenant-a"}},
		SecondPrincipal: http.Header{"Authorization": {"Bearer test-tenant-b"}},
	}
	fmt.Println(opts.Endpoint, string(opts.Body(7)))
	// Output: /v1/orders {"sku":"book","quantity":1,"note":"conformance 7"}
}

package idemtest_test

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemkit/idem/idemtest"
)

// A client that retries with the same Idempotency-Key pays once, even
// when the server fails the first attempt and the second attempt's answer
// is lost.
func Example() {
	srv, err := idemtest.Start() // in a test: idemtest.NewServer(t)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	srv.FailNext(1, http.StatusServiceUnavailable, time.Second)
	srv.LoseNextResponses(1)

	// A client without keep-alive, so a dropped connection is an error
	// here rather than a silent resend inside net/http.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for attempt := 1; attempt <= 3; attempt++ {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments",
			strings.NewReader(`{"amount":1000,"currency":"EUR","reference":"order-42"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-42-payment")
		resp, err := client.Do(req)
		if err != nil {
			fmt.Printf("attempt %d: no answer\n", attempt)
			continue
		}
		resp.Body.Close()
		fmt.Printf("attempt %d: %d replayed=%q\n", attempt, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	fmt.Println("requests:", srv.Requests(), "payments:", srv.PaymentCount())
	// Output:
	// attempt 1: 503 replayed=""
	// attempt 2: no answer
	// attempt 3: 201 replayed="true"
	// requests: 3 payments: 1
}

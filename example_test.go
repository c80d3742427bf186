package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
)

// startExampleServer starts the reference server for an example, which
// has no *testing.T for idemtest.NewServer.
func startExampleServer() *idemtest.Server {
	srv, err := idemtest.Start()
	if err != nil {
		panic(err)
	}
	return srv
}

func newPayment(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/payments",
		strings.NewReader(`{"amount": 1000, "currency": "EUR", "reference": "order-42"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok_example")
	return req
}

// One payment: the key is born with the intent, the answer survives a lost
// response, and a second Do replays it from the keystore.
func Example_quickstart() {
	srv := startExampleServer()
	defer srv.Close()
	client, err := idem.New()
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()

	in, err := client.Begin(ctx, "order-42/payment", newPayment(srv.URL))
	if err != nil {
		panic(err)
	}
	srv.LoseNextResponses(1) // the payment happens, the answer is lost
	resp, err := client.Do(ctx, in)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, in.State, "server replay:", idem.IsReplay(resp))

	again, _ := client.Do(ctx, in)
	fmt.Println(again.StatusCode, "local replay:", idem.IsLocalReplay(again))
	fmt.Println("payments:", srv.PaymentCount())
	// Output:
	// 201 succeeded server replay: true
	// 201 local replay: true
	// payments: 1
}

// A deadline shorter than the server's Retry-After: Do returns at once,
// the intent stays pending with the hint in the error.
func ExampleGiveUpError() {
	srv := startExampleServer()
	defer srv.Close()
	client, _ := idem.New()
	defer client.Close()

	srv.FailNext(1, http.StatusServiceUnavailable, 30*time.Second)
	in, _ := client.Begin(context.Background(), "", newPayment(srv.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := client.Do(ctx, in)

	var gave *idem.GiveUpError
	if errors.As(err, &gave) {
		fmt.Println(errors.Is(err, idem.ErrWaitBeyondDeadline), gave.LastStatus, gave.RetryAfter, in.State)
	}
	// Output:
	// true 503 30s pending
}

// An existing API client made safe by swapping its transport.
func ExampleClient_Transport() {
	srv := startExampleServer()
	defer srv.Close()
	client, _ := idem.New()
	defer client.Close()
	api := &http.Client{Transport: client.Transport()}

	srv.FailNext(2, http.StatusServiceUnavailable, 0)
	resp, err := api.Do(newPayment(srv.URL))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "payments:", srv.PaymentCount())
	// Output:
	// 201 payments: 1
}

// Command transport shows an existing API client made safe to retry by
// swapping its http.Client's transport for idem's: no other change to the
// client's code. The in-process reference server fails and drops answers
// on purpose; every payment still happens exactly once.
//
//	go run ./examples/transport
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
)

// PaymentsClient is an ordinary typed API client built on *http.Client,
// as it existed before idem.
type PaymentsClient struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// Payment is what the API answers.
type Payment struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	Status string `json:"status"`
}

// Create charges amount (in cents) in EUR.
func (p *PaymentsClient) Create(ctx context.Context, amount int64, reference string) (*Payment, error) {
	body, err := json.Marshal(map[string]any{"amount": amount, "currency": "EUR", "reference": reference})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL+"/v1/payments", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("create payment: %s: %s", resp.Status, b)
	}
	var pay Payment
	if err := json.NewDecoder(resp.Body).Decode(&pay); err != nil {
		return nil, err
	}
	return &pay, nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// The reference server, on a free local port.
	srv, err := idemtest.Start()
	if err != nil {
		return err
	}
	defer srv.Close()

	client, err := idem.New(idem.WithBackoff(20*time.Millisecond, time.Second))
	if err != nil {
		return err
	}
	defer client.Close()

	// The only change: the transport.
	payments := &PaymentsClient{
		BaseURL: srv.URL,
		Token:   "tok_transport",
		HTTP:    &http.Client{Transport: client.Transport(), Timeout: 30 * time.Second},
	}

	for i, fault := range []struct {
		name string
		arm  func()
	}{
		{"no fault", func() {}},
		{"503 twice", func() { srv.FailNext(2, http.StatusServiceUnavailable, 0) }},
		{"answer lost after charging", func() { srv.LoseNextResponses(1) }},
		{"connection reset", func() { srv.ResetNext(1) }},
	} {
		fault.arm()
		pay, err := payments.Create(ctx, int64(100*(i+1)), fmt.Sprintf("transport-%d", i))
		if err != nil {
			return fmt.Errorf("%s: %w", fault.name, err)
		}
		fmt.Fprintf(out, "%-28s -> %s %d cents %s\n", fault.name, pay.ID, pay.Amount, pay.Status)
	}
	n := srv.PaymentCount()
	fmt.Fprintf(out, "payments on the server: %d (one per Create)\n", n)
	if n != 4 {
		return fmt.Errorf("expected 4 payments, got %d", n)
	}
	return nil
}

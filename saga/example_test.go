package saga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/saga"
)

// pay is a payment of amount under reference on the reference server.
func pay(baseURL string, amount int, reference string) *http.Request {
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, amount, reference)
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok_example")
	return req
}

// A checkout of three steps whose last is refused: the earlier steps are
// undone in reverse order, the charge refunded once, and running the
// same code again sends nothing.
func Example() {
	srv, err := idemtest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := idem.New() // idem.WithBoltStore("keys.db", nil) to survive a crash
	if err != nil {
		panic(err)
	}
	defer client.Close()
	s, err := saga.New(client)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	checkout := func(run *saga.Run) error {
		_, err := run.Step(ctx, "charge", pay(srv.URL, 1000, "order-42"),
			saga.Compensate(func(*http.Response) (*http.Request, error) {
				return pay(srv.URL, 1000, "refund-order-42"), nil
			}))
		if err != nil {
			return run.Fail(ctx, err)
		}
		slot, err := run.Local(ctx, "reserve", func(context.Context) ([]byte, error) {
			return []byte("shelf-7"), nil // stored with the run, never computed again
		}, saga.CompensateLocal(func(_ context.Context, slot []byte) error {
			fmt.Println("released", string(slot))
			return nil
		}))
		if err != nil {
			return run.Fail(ctx, err)
		}
		_, err = run.Step(ctx, "ship", pay(srv.URL, 0, "ship-order-42")) // amount 0: refused
		if err != nil {
			fmt.Println("ship refused:", errors.Is(err, idem.ErrFinalFailure), "slot", string(slot))
			return run.Fail(ctx, err)
		}
		return run.Complete(ctx)
	}

	run, err := s.Run(ctx, "order-42")
	if err != nil {
		panic(err)
	}
	fmt.Println("checkout:", checkout(run), run.State())
	sent := srv.Requests()

	again, err := s.Run(ctx, "order-42") // after a crash too: the same code
	if err != nil {
		panic(err)
	}
	fmt.Println("again:", checkout(again), again.State(), "sent:", srv.Requests()-sent)
	fmt.Println("payments:", srv.PaymentCount())
	// Output:
	// ship refused: true slot shelf-7
	// released shelf-7
	// checkout: <nil> compensated
	// ship refused: true slot shelf-7
	// again: <nil> compensated sent: 0
	// payments: 2
}

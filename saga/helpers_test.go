package saga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/saga"
)

// testToken is the bearer token of every request; the reference server
// scopes keys by it.
const testToken = "tok_saga_test"

// payment is a POST /v1/payments of amount under reference: the charge,
// the shipment, and (as a payment of its own) the refund of the steps.
func payment(t testing.TB, baseURL string, amount int, reference string) *http.Request {
	t.Helper()
	req, err := paymentReq(baseURL, amount, reference)
	require.NoError(t, err)
	return req
}

func paymentReq(baseURL string, amount int, reference string) (*http.Request, error) {
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, amount, reference)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req, nil
}

// refund is the compensation of a payment step: a payment referenced
// "refund-" and the step's reference, of the amount the answer names.
func refund(baseURL string) func(resp *http.Response) (*http.Request, error) {
	return func(resp *http.Response) (*http.Request, error) {
		var p struct {
			Amount    int    `json:"amount"`
			Reference string `json:"reference"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			return nil, err
		}
		return paymentReq(baseURL, p.Amount, "refund-"+p.Reference)
	}
}

// effects counts the payments the server made under reference.
func effects(srv *idemtest.Server, reference string) int {
	n := 0
	for _, p := range srv.Payments(testToken) {
		if p.Reference == reference {
			n++
		}
	}
	return n
}

// fastOptions retry at once, with no retry budget in the way.
func fastOptions() []idem.Option {
	return []idem.Option{
		idem.WithBackoffPolicy(func(int) time.Duration { return 2 * time.Millisecond }),
		idem.WithBudget(nil),
	}
}

// boltClient opens a client on the bbolt keystore at path, closed when
// the test ends (closing it again is harmless).
func boltClient(t testing.TB, path string, opts ...idem.Option) *idem.Client {
	t.Helper()
	c, err := idem.New(append(append(fastOptions(), idem.WithBoltStore(path, nil)), opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newSaga is a Saga on a fresh bbolt keystore in the test's directory,
// with the path of the file.
func newSaga(t testing.TB, opts ...idem.Option) (*saga.Saga, *idem.Client, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.db")
	c := boltClient(t, path, opts...)
	s, err := saga.New(c)
	require.NoError(t, err)
	return s, c, path
}

var bg = context.Background()

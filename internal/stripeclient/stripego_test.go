package stripeclient_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"

	"github.com/idemkit/idem/idemtest"
)

// apiKey is the secret key stripe-go sends as its bearer token; the
// reference server makes it the principal whose payments are listed.
const apiKey = "sk_test_idem"

// maxRetries is stripe-go's MaxNetworkRetries in every case: enough that
// a case where stripe-go does not retry proves it chose not to.
const maxRetries = 2

// retryLog records the retries stripe-go announces ("Initiating retry"
// at warning level), so a case can tell stripe-go's own retries apart
// from the application's.
type retryLog struct {
	mu      sync.Mutex
	retries []string
}

func (l *retryLog) Debugf(string, ...any) {}
func (l *retryLog) Infof(string, ...any)  {}
func (l *retryLog) Errorf(string, ...any) {}

func (l *retryLog) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "Initiating retry") {
		l.mu.Lock()
		l.retries = append(l.retries, msg)
		l.mu.Unlock()
	}
}

// count returns how many retries stripe-go has announced.
func (l *retryLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.retries)
}

// stripeAgainst starts the reference server with the Stripe dialect and
// returns it with a stripe-go backend pointed at it, as an application
// configures stripe-go for another base URL, and stripe-go's retry log.
func stripeAgainst(t *testing.T) (*idemtest.Server, stripe.RawRequestBackend, *retryLog) {
	t.Helper()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe"))
	log := &retryLog{}
	b := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(srv.URL),
		HTTPClient:        srv.Client(),
		MaxNetworkRetries: stripe.Int64(maxRetries),
		LeveledLogger:     log,
		EnableTelemetry:   stripe.Bool(false),
	})
	raw, ok := b.(stripe.RawRequestBackend)
	require.True(t, ok, "stripe-go's API backend makes raw requests")
	return srv, raw, log
}

// pay creates a payment through stripe-go: a form-encoded POST
// /v1/payments (the reference API's route; stripe-go's raw request sends
// any /v1 path as it sends its own resources), under key, or under a key
// stripe-go makes itself when key is "".
func pay(t *testing.T, b stripe.RawRequestBackend, key string, amount int64) (*stripe.APIResponse, error) {
	t.Helper()
	params := &stripe.RawParams{Params: stripe.Params{Context: t.Context()}}
	if key != "" {
		params.IdempotencyKey = stripe.String(key)
	}
	form := url.Values{"amount": {fmt.Sprint(amount)}, "currency": {"EUR"}, "reference": {"order-7"}}
	return b.RawRequest("POST", "/v1/payments", apiKey, form.Encode(), params)
}

// stripeErrorOf returns the *stripe.Error stripe-go reported, failing the
// test when err is not one.
func stripeErrorOf(t *testing.T, err error) *stripe.Error {
	t.Helper()
	require.Error(t, err)
	var serr *stripe.Error
	require.ErrorAs(t, err, &serr, "stripe-go reports a Stripe error document as *stripe.Error")
	return serr
}

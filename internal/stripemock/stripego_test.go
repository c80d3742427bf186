package stripemock_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
)

// sentRequest is what stripe-go put on the wire for one call.
type sentRequest struct {
	path, contentType, key string
	body                   []byte
}

// recorder is stripe-go's HTTP transport: it keeps each request's body
// and headers, then sends it on.
type recorder struct {
	transport *http.Transport
	mu        sync.Mutex
	sent      []sentRequest
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	r.mu.Lock()
	r.sent = append(r.sent, sentRequest{path: req.URL.Path, contentType: req.Header.Get("Content-Type"),
		key: req.Header.Get("Idempotency-Key"), body: body})
	r.mu.Unlock()
	return r.transport.RoundTrip(req)
}

// last is the last request stripe-go sent.
func (r *recorder) last(t *testing.T) sentRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.sent, "stripe-go sent nothing")
	return r.sent[len(r.sent)-1]
}

// retryLog counts the retries stripe-go announces ("Initiating retry" at
// warning level), so a case can tell stripe-go's own retries apart.
type retryLog struct {
	mu      sync.Mutex
	retries int
}

func (l *retryLog) Debugf(string, ...any) {}
func (l *retryLog) Infof(string, ...any)  {}
func (l *retryLog) Errorf(string, ...any) {}

func (l *retryLog) Warnf(format string, v ...any) {
	if strings.HasPrefix(fmt.Sprintf(format, v...), "Initiating retry") {
		l.mu.Lock()
		l.retries++
		l.mu.Unlock()
	}
}

func (l *retryLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retries
}

// stripeGo is a stripe-go v85 client of baseURL, as an application
// configures it for another base URL, with two network retries, its
// requests recorded and its retries counted. Its idle connections are
// closed when the test ends, before a proxy in front of stripe-mock waits
// for its connections to end.
func stripeGo(t *testing.T, baseURL string) (*stripe.Client, *recorder, *retryLog) {
	rec, log := &recorder{transport: http.DefaultTransport.(*http.Transport).Clone()}, &retryLog{}
	t.Cleanup(rec.transport.CloseIdleConnections)
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(baseURL),
		HTTPClient:        &http.Client{Transport: rec, Timeout: 30 * time.Second},
		MaxNetworkRetries: stripe.Int64(2),
		LeveledLogger:     log,
		EnableTelemetry:   stripe.Bool(false),
	})
	return stripe.NewClient(apiKey, stripe.WithBackends(&stripe.Backends{API: backend})), rec, log
}

// stripe-go and idem, each a client of stripe-mock, send the same
// form-encoded body (idem sends the bytes stripe-go encoded) and reach the
// same verdict on stripe-mock's answer: a 200 is the object, and a 400
// invalid_request_error is final and not resent, by stripe-go (a
// *stripe.Error, no retry) and by idem (dialect.Stripe() Refused: Failed
// after one attempt).
func TestStripeMock_StripeGoAndIdemAgree(t *testing.T) {
	mock := startStripeMock(t)
	sc, rec, log := stripeGo(t, mock.URL)
	c := stripeClient(t)
	ctx := context.Background()

	t.Run("payment intent created", func(t *testing.T) {
		params := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"),
			PaymentMethodTypes: stripe.StringSlice([]string{"card"})}
		params.AddMetadata("order", "order-7")
		pi, err := sc.V1PaymentIntents.Create(ctx, params)
		require.NoError(t, err)
		sent := rec.last(t)
		assert.Equal(t, "application/x-www-form-urlencoded", sent.contentType)
		assert.NotEmpty(t, sent.key, "stripe-go makes a key for every POST")
		assert.Equal(t, sent.key, pi.LastResponse.IdempotencyKey, "stripe-mock echoes stripe-go's key")
		assert.Equal(t, int64(2000), pi.Amount)

		in, err := c.Begin(ctx, "stripego/created", postRequest(t, mock.URL+sent.path, sent.contentType, string(sent.body)))
		require.NoError(t, err)
		resp, err := c.Do(ctx, in)
		require.NoError(t, err)
		obj, body := readObject(t, resp)
		assert.Equal(t, "payment_intent", obj.Object, body)
		assert.Equal(t, int64(2000), obj.Amount, body)
		assert.Equal(t, idem.Succeeded, in.State)
		assert.Zero(t, log.count())
	})

	t.Run("missing amount refused", func(t *testing.T) {
		before := mock.requests(t, http.MethodPost, "/v1/payment_intents")
		_, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Currency: stripe.String("usd")})
		var serr *stripe.Error
		require.ErrorAs(t, err, &serr)
		assert.Equal(t, http.StatusBadRequest, serr.HTTPStatusCode)
		assert.Equal(t, stripe.ErrorTypeInvalidRequest, serr.Type)
		assert.Zero(t, log.count(), "stripe-go does not retry it")
		sent := rec.last(t)

		in, err := c.Begin(ctx, "stripego/refused", postRequest(t, mock.URL+sent.path, sent.contentType, string(sent.body)))
		require.NoError(t, err)
		resp, err := c.Do(ctx, in)
		require.ErrorIs(t, err, idem.ErrFinalFailure)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, dialect.Refused, dialect.Stripe().Classify(dialect.Answer{Method: http.MethodPost,
			Status: resp.StatusCode, Header: resp.Header, Body: b}))
		assert.Equal(t, idem.Failed, in.State)
		assert.Equal(t, 1, in.Attempts, "idem does not resend it either")
		assert.Equal(t, before+2, mock.requests(t, http.MethodPost, "/v1/payment_intents"), "one request from each client")
	})
}

// stripe-go meets the same lost answer as idem does in
// TestStripeMock_LostAnswerIsResentWithTheSameKey, and does the same: it
// resends with the same key and returns stripe-mock's second answer, a
// second PaymentIntent. The duplicate is stripe-mock's (it keeps no keys),
// not either client's.
func TestStripeMock_StripeGoResendsALostAnswerWithItsKey(t *testing.T) {
	mock := startStripeMock(t)
	before := mock.requests(t, http.MethodPost, "/v1/payment_intents")
	key, err := idem.NewKeyV4()
	require.NoError(t, err)
	proxy := droppedAfterKey(t, mock, key)
	sc, rec, log := stripeGo(t, "http://"+proxy.Addr())

	params := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd")}
	params.SetIdempotencyKey(key)
	pi, err := sc.V1PaymentIntents.Create(context.Background(), params)
	require.NoError(t, err)
	assert.Equal(t, 1, proxy.Dropped())
	assert.Equal(t, 1, log.count(), "stripe-go's own retry")
	assert.Equal(t, key, pi.LastResponse.IdempotencyKey)
	rec.mu.Lock()
	require.Len(t, rec.sent, 2)
	assert.Equal(t, key, rec.sent[0].key)
	assert.Equal(t, key, rec.sent[1].key)
	rec.mu.Unlock()
	assert.Equal(t, before+2, mock.requests(t, http.MethodPost, "/v1/payment_intents"),
		"stripe-mock executed both attempts: it has no idempotency layer")
}

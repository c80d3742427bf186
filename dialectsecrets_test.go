package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// adyenKey is the Adyen API key of these tests: found anywhere but on the
// wire to the intent's own origin, it leaked.
const adyenKey = "AQEyhmfxsekrit-adyen-api-key-0042"

// headerLog records one header of every request a server sees.
type headerLog struct {
	mu     sync.Mutex
	values []string
}

func (l *headerLog) record(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.values = append(l.values, v)
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.values...)
}

// adyenRequest is a payment for the Adyen simulator, authenticated by
// X-API-Key alone, as Adyen's API key authentication is.
func adyenRequest(t *testing.T, baseURL, reference string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments",
		strings.NewReader(`{"amount": 1000, "currency": "EUR", "reference": "`+reference+`"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-API-key", adyenKey) // the spelling of Adyen's page
	return req
}

// Under dialect.Adyen, X-API-Key is a secret without WithSecretHeaders:
// against the Adyen simulator, with a lost answer, every attempt carries
// it, and neither the keystore file, nor a stored record, nor the debug
// log holds it; a resume without it sends nothing.
func TestAdyenAPIKeyIsSecretByDefault(t *testing.T) {
	t.Parallel()
	sim := idemtest.NewServer(t, idemtest.WithDialect("adyen"))
	var sent headerLog
	f := newFront(t, sim.URL, func(_ int, _ http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		sent.record(r.Header.Get("X-API-Key"))
		return false
	})
	w := newLeakWitness(t, WithDialect(dialect.Adyen()), WithMaxAttempts(3))
	sim.LoseNextResponses(1)
	in := begin(t, w.c, "order-7/payment", adyenRequest(t, f.URL, "order-7"))
	resp, err := w.c.Do(context.Background(), in)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 1, sim.PaymentCount())
	require.Len(t, sent.all(), 2, "the lost answer was retried")
	for i, v := range sent.all() {
		assert.Equal(t, adyenKey, v, "attempt %d carries the key", i+1)
	}
	recs, err := w.c.store.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Contains(t, recs[0].SecretHeaders, "X-Api-Key", "the record says the intent was begun with it")
	assert.NotEmpty(t, recs[0].Principal, "the key names the principal")
	w.assertNoSecret(t, adyenKey)
}

// An intent begun with an Adyen API key is not resent without it after a
// restart: the key is part of the intent's principal.
func TestAdyenAPIKeyIsRequiredOnResume(t *testing.T) {
	t.Parallel()
	sim := idemtest.NewServer(t, idemtest.WithDialect("adyen"))
	store := keystore.NewMemory()
	first := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(dialect.Adyen()), WithMaxAttempts(1))
	sim.LoseNextResponses(1)
	in := begin(t, first, "", adyenRequest(t, sim.URL, "resume"))
	_, err := first.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)

	second := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(dialect.Adyen()))
	resumed, err := second.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	before := sim.Requests()
	_, err = second.Do(context.Background(), resumed)
	require.ErrorIs(t, err, ErrCredentialsMissing)
	assert.ErrorContains(t, err, "X-Api-Key")
	assert.Equal(t, before, sim.Requests(), "nothing was sent")

	withKey := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(dialect.Adyen()),
		WithRequestEditor(func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-API-Key", adyenKey)
			return nil
		}))
	resumed, err = withKey.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	resp, err := withKey.Do(context.Background(), resumed)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, Succeeded, resumed.State)
	assert.Equal(t, 1, sim.PaymentCount(), "the resume got the replay")
}

// A 307 or 308 to another origin carries neither the dialect's credential
// header nor the intent's secret query parameter the server echoed into
// its Location; one to the intent's own origin carries both.
func TestRedirectToAnotherOriginCarriesNoDialectCredential(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var elsewhereKeys, elsewhereQueries, homeKeys headerLog
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			elsewhereKeys.record(r.Header.Get("X-API-Key"))
			elsewhereQueries.record(r.URL.RawQuery)
			w.WriteHeader(http.StatusCreated)
		}))
		t.Cleanup(elsewhere.Close)
		home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			homeKeys.record(r.Header.Get("X-API-Key"))
			if r.URL.Path == "/v1/payments" {
				// Same origin first, then another, the query echoed.
				w.Header().Set("Location", "/v1/moved?"+r.URL.RawQuery)
				w.WriteHeader(code)
				return
			}
			w.Header().Set("Location", elsewhere.URL+"/v1/payments?"+r.URL.RawQuery)
			w.WriteHeader(code)
		}))
		t.Cleanup(home.Close)

		w := newLeakWitness(t, WithDialect(dialect.Adyen()))
		req := adyenRequest(t, home.URL, "redirect")
		req.URL.RawQuery = "currency=EUR&api_key=" + leakSecret
		in := begin(t, w.c, "", req)
		resp, err := w.c.Do(context.Background(), in)
		require.NoError(t, err, "status %d", code)
		resp.Body.Close()
		assert.Equal(t, Succeeded, in.State)

		assert.Equal(t, []string{adyenKey, adyenKey}, homeKeys.all(), "the intent's own origin gets the key (status %d)", code)
		require.Len(t, elsewhereKeys.all(), 1)
		assert.Empty(t, elsewhereKeys.all()[0], "X-API-Key followed a %d to another origin", code)
		assert.Equal(t, "currency=EUR", elsewhereQueries.all()[0], "the secret query parameter followed a %d to another origin", code)
		w.assertNoSecret(t, adyenKey)
	}
}

// A 202's operation on the intent's origin is polled with the dialect's
// credential header; one on another origin without it.
func TestPollsCarryTheDialectCredentialToTheIntentsOriginOnly(t *testing.T) {
	t.Parallel()
	var elsewhereKeys, homePollKeys headerLog
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereKeys.record(r.Header.Get("X-API-Key"))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"resultCode":"Authorised"}`))
	}))
	t.Cleanup(elsewhere.Close)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/payments":
			w.Header().Set("Location", "/v1/operations/op_1")
			w.WriteHeader(http.StatusAccepted)
		case "/v1/payouts":
			w.Header().Set("Location", elsewhere.URL+"/v1/operations/op_2")
			w.WriteHeader(http.StatusAccepted)
		default:
			homePollKeys.record(r.Header.Get("X-API-Key"))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"resultCode":"Authorised"}`))
		}
	}))
	t.Cleanup(home.Close)
	w := newLeakWitness(t, WithDialect(dialect.Adyen()))
	for _, path := range []string{"/v1/payments", "/v1/payouts"} {
		req := adyenRequest(t, home.URL, path)
		req.URL.Path = path
		in := begin(t, w.c, "", req)
		resp, err := w.c.Do(context.Background(), in)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, Succeeded, in.State, path)
	}
	assert.Equal(t, []string{adyenKey}, homePollKeys.all(), "the intent's own origin is polled with the key")
	assert.Equal(t, []string{""}, elsewhereKeys.all(), "another origin is polled without it")
	w.assertNoSecret(t, adyenKey)
}

// A dialect's credential header that is not a header name, or is its key
// header, makes WithDialect fail.
func TestDialectSecretHeadersAreValidated(t *testing.T) {
	t.Parallel()
	d := dialect.Adyen()
	d.SecretHeaders = []string{"X API Key"}
	_, err := New(WithDialect(d))
	require.ErrorContains(t, err, "SecretHeaders")
	d.SecretHeaders = []string{"idempotency-key"}
	_, err = New(WithDialect(d))
	require.ErrorContains(t, err, "KeyHeader")
}

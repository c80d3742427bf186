package stripemock_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/internal/testenv"
)

// paymentIntent is the form of a PaymentIntent create.
var paymentIntent = url.Values{"amount": {"2000"}, "currency": {"usd"}, "metadata[order]": {"order-7"}}

// droppedAfterKey puts a proxy in front of mock that drops stripe-mock's
// answer to the first request carrying "Idempotency-Key: key" on the
// wire: stripe-mock handled it, idem never hears.
func droppedAfterKey(t *testing.T, mock *stripeMock, key string) *testenv.AckDropProxy {
	t.Helper()
	u, err := url.Parse(mock.URL)
	require.NoError(t, err)
	proxy := testenv.StartAckDropProxy(t, u.Host, []byte("Idempotency-Key: "+key+"\r\n"))
	proxy.Arm()
	return proxy
}

// A lost answer: stripe-mock made a PaymentIntent and its answer never
// reached idem. idem resends with the same key (the proxy saw the key on
// the first attempt; stripe-mock echoes it on the second) and stores the
// answer it got, in bbolt, where a new client finds it.
//
// stripe-mock has no idempotency layer (server.go: "We don't do anything
// with the idempotency key for now, but reflect it back"), so the resend
// is a second execution: it logs two creates (each under a fresh id,
// generator.go's randomID), and its answer is not marked
// Idempotent-Replayed. idem records exactly what
// it was told (Succeeded, two attempts, that answer, not a replay). What
// this proves is idem's side: the same key on the resend, and an answer
// stored as it came. What it cannot prove is the provider's side: that
// Stripe answers the resend with the first PaymentIntent
// (https://docs.stripe.com/api/idempotent_requests); only Stripe itself,
// or the reference server's simulator, shows that.
func TestStripeMock_LostAnswerIsResentWithTheSameKey(t *testing.T) {
	mock := startStripeMock(t)
	before := mock.requests(t, http.MethodPost, "/v1/payment_intents")
	key, err := idem.NewKeyV4()
	require.NoError(t, err)
	proxy := droppedAfterKey(t, mock, key)
	storePath := filepath.Join(t.TempDir(), "idem.db")
	c := stripeClient(t, idem.WithBoltStore(storePath, nil))

	in, err := c.Begin(context.Background(), "stripemock/lost-answer",
		formRequest(t, "http://"+proxy.Addr(), "/v1/payment_intents", paymentIntent), idem.WithIntentKey(key))
	require.NoError(t, err)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	obj, body := readObject(t, resp)
	assert.Equal(t, "payment_intent", obj.Object, body)

	assert.Equal(t, 1, proxy.Dropped(), "the first attempt carried the key and its answer was lost")
	assert.Equal(t, key, resp.Header.Get("Idempotency-Key"), "the resend carried the same key: stripe-mock echoes it")
	assert.Empty(t, resp.Header.Get("Idempotent-Replayed"), "stripe-mock does not replay")
	assert.False(t, idem.IsReplay(resp), "idem does not call a fresh answer a replay")
	assert.Equal(t, before+2, mock.requests(t, http.MethodPost, "/v1/payment_intents"),
		"stripe-mock executed both attempts: it has no idempotency layer")
	assert.Equal(t, idem.Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	require.NoError(t, c.Close())

	// Another process opens the keystore: the intent is settled on the
	// answer idem received, and is not sent again.
	reopened := stripeClient(t, idem.WithBoltStore(storePath, nil))
	again, err := reopened.Resume(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, idem.Succeeded, again.State)
	assert.Equal(t, 2, again.Attempts)
	replay, err := reopened.Do(context.Background(), again)
	require.NoError(t, err)
	assert.True(t, idem.IsLocalReplay(replay))
	stored, _ := readObject(t, replay)
	assert.Equal(t, obj.ID, stored.ID, "the stored PaymentIntent is the one idem was answered with")
	assert.Equal(t, before+2, mock.requests(t, http.MethodPost, "/v1/payment_intents"), "nothing sent on the replay")
}

// A lost answer and then no network at all: stripe-mock made the
// PaymentIntent, idem never learns so. idem does not call the intent
// failed: it gives up with ErrOutcomeUnknown and keeps it Pending, marked
// as possibly executed, for a resume with the same key or a
// reconciliation.
func TestStripeMock_LostAnswerWithoutNetworkStaysUnknown(t *testing.T) {
	mock := startStripeMock(t)
	before := mock.requests(t, http.MethodPost, "/v1/payment_intents")
	key, err := idem.NewKeyV4()
	require.NoError(t, err)
	proxy := droppedAfterKey(t, mock, key)
	proxy.StopAfterDrop()
	c := stripeClient(t, idem.WithMaxAttempts(3))

	in, err := c.Begin(context.Background(), "stripemock/lost-for-good",
		formRequest(t, "http://"+proxy.Addr(), "/v1/payment_intents", paymentIntent), idem.WithIntentKey(key))
	require.NoError(t, err)
	_, err = c.Do(context.Background(), in)
	require.ErrorIs(t, err, idem.ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, idem.ErrFinalFailure)
	assert.Equal(t, 1, proxy.Dropped())
	assert.Equal(t, before+1, mock.requests(t, http.MethodPost, "/v1/payment_intents"), "stripe-mock made the PaymentIntent")
	assert.Equal(t, idem.Pending, in.State)
	assert.True(t, in.MayHaveExecuted)
	assert.Equal(t, 3, in.Attempts, "every attempt allowed, the later ones refused at the closed port")
}

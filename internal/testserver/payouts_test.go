package testserver

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func payout(token, key string) call {
	return call{method: http.MethodPost, path: "/v1/payouts", token: token, key: key,
		body: `{"amount":5000,"currency":"EUR","reference":"payout-7"}`}
}

func decodeOperation(t *testing.T, body []byte) operationDocument {
	t.Helper()
	var doc operationDocument
	require.NoError(t, json.Unmarshal(body, &doc), "body: %s", body)
	return doc
}

func TestPayoutSettlesAfterTheDelay(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	_, ts := startServer(t, WithServerClock(clock.Now), WithPayoutDelay(3*time.Second))

	accepted := do(t, ts.Client(), ts.URL, payout("alice", "po-1"))
	require.Equal(t, http.StatusAccepted, accepted.status, "body: %s", accepted.body)
	op := decodeOperation(t, accepted.body)
	assert.Regexp(t, `^op_[a-z2-7]{24}$`, op.ID)
	assert.Equal(t, "payout", op.Kind)
	assert.Equal(t, "pending", op.Status)
	assert.Equal(t, int64(5000), op.Amount)
	assert.Nil(t, op.Settled)
	assert.Equal(t, "/v1/operations/"+op.ID, accepted.header.Get("Location"))
	assert.Equal(t, "3", accepted.header.Get("Retry-After"))

	replay := do(t, ts.Client(), ts.URL, payout("alice", "po-1"))
	assert.Equal(t, http.StatusAccepted, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, accepted.body, replay.body, "the replay names the same operation")
	assert.Equal(t, accepted.header.Get("Location"), replay.header.Get("Location"))
	assert.Equal(t, "3", replay.header.Get("Retry-After"))

	poll := call{method: http.MethodGet, path: accepted.header.Get("Location"), token: "alice"}
	clock.Advance(time.Second)
	pending := do(t, ts.Client(), ts.URL, poll)
	require.Equal(t, http.StatusOK, pending.status)
	assert.Equal(t, "pending", decodeOperation(t, pending.body).Status)
	assert.Equal(t, "2", pending.header.Get("Retry-After"))

	clock.Advance(2 * time.Second)
	settled := do(t, ts.Client(), ts.URL, poll)
	require.Equal(t, http.StatusOK, settled.status)
	doc := decodeOperation(t, settled.body)
	assert.Equal(t, "succeeded", doc.Status)
	require.NotNil(t, doc.Settled)
	assert.True(t, doc.Created.Add(3*time.Second).Equal(*doc.Settled))
	assert.Empty(t, settled.header.Get("Retry-After"))

	other := do(t, ts.Client(), ts.URL, call{method: http.MethodGet, path: poll.path, token: "bob"})
	assert.Equal(t, http.StatusNotFound, other.status)
}

func TestPayoutWithoutDelaySettlesAtOnce(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, WithPayoutDelay(0))
	accepted := do(t, ts.Client(), ts.URL, payout("", "po"))
	require.Equal(t, http.StatusAccepted, accepted.status)
	assert.Equal(t, "1", accepted.header.Get("Retry-After"), "a 202 always tells when to poll")
	got := do(t, ts.Client(), ts.URL, call{method: http.MethodGet, path: accepted.header.Get("Location")})
	assert.Equal(t, "succeeded", decodeOperation(t, got.body).Status)
}

func TestPayoutAndPaymentKeysAreScopedByRoute(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	assert.Equal(t, http.StatusCreated, do(t, ts.Client(), ts.URL, pay("alice", "same")).status)
	assert.Equal(t, http.StatusAccepted, do(t, ts.Client(), ts.URL, payout("alice", "same")).status)
	assert.Equal(t, 1, paymentCount(t, s))
}

package idem

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

func payoutRequest(t *testing.T, baseURL string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payouts",
		strings.NewReader(`{"amount": 5000, "currency": "EUR", "reference": "payout"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

func operationStatus(t *testing.T, resp *http.Response) string {
	t.Helper()
	var doc struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &doc))
	return doc.Status
}

func TestDoPollsAnAcceptedOperationToItsEnd(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithPayoutDelay(100*time.Millisecond))
	// The server rounds Retry-After up to a second; the ceiling keeps the
	// test fast.
	c := newTestClient(t, WithRetryAfterCeiling(50*time.Millisecond), WithPolling(20*time.Millisecond, 5*time.Second))

	in := begin(t, c, "", payoutRequest(t, srv.URL))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "succeeded", operationStatus(t, resp))
	assert.Equal(t, Succeeded, in.State)
	assert.Contains(t, in.Operation, "/v1/operations/")

	again, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.True(t, IsLocalReplay(again))
	assert.Equal(t, "succeeded", operationStatus(t, again))
}

func TestDoHandsBackAcceptedAndResumesPolling(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithPayoutDelay(300*time.Millisecond))
	noPolling := newTestClient(t, WithPolling(time.Second, 0))

	in := begin(t, noPolling, "", payoutRequest(t, srv.URL))
	resp, err := noPolling.Do(context.Background(), in)
	require.NoError(t, err, "accepted is not an error")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "pending", operationStatus(t, resp))
	assert.Equal(t, Accepted, in.State)
	pending, err := noPolling.Pending(context.Background())
	require.NoError(t, err)
	assert.Len(t, pending, 1, "an accepted intent is still to be settled")

	// A later Do polls; it never resends the payout.
	noPolling.cfg.pollMax = 5 * time.Second
	noPolling.cfg.raCeiling = 50 * time.Millisecond
	var posts, gets int
	noPolling.cfg.editor = func(_ context.Context, r *http.Request) error {
		if r.Method == http.MethodPost {
			posts++
		} else {
			gets++
		}
		return nil
	}
	resp, err = noPolling.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "succeeded", operationStatus(t, resp))
	assert.Equal(t, Succeeded, in.State)
	assert.Zero(t, posts, "the payout is never resent")
	assert.Positive(t, gets)
}

func TestOperationPending(t *testing.T) {
	t.Parallel()
	assert.True(t, operationPending([]byte(`{"status":"pending"}`)))
	assert.True(t, operationPending([]byte(`{"status":"Processing"}`)))
	assert.False(t, operationPending([]byte(`{"status":"succeeded"}`)))
	assert.False(t, operationPending([]byte(`not json`)))
	assert.Equal(t, "https://a.example/v1/operations/op_1", operationURL("https://a.example/v1/payouts", "/v1/operations/op_1"))
	assert.Equal(t, "https://b.example/x", operationURL("https://a.example/v1/payouts", "https://b.example/x"))
}

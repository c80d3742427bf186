package idem

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An intent settled by hand replays the status the person found at the
// provider (Settlement.Status), marked as a settlement; without one, a
// 200 the header says idem made up.
func TestSettleByHandReplaysTheStatusGiven(t *testing.T) {
	t.Parallel()
	_, f := expiredCredentialsFront(t)
	c := newTestClient(t, WithMaxAttempts(1))
	ctx := context.Background()
	in := begin(t, c, "order-10/payment", paymentRequest(t, f.URL, 1000, "order-10"))
	_, err := c.Do(ctx, in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)

	for _, bad := range []Settlement{
		{Outcome: OutcomeSucceeded, By: "alice", Note: "n", Status: http.StatusAccepted},
		{Outcome: OutcomeSucceeded, By: "alice", Note: "n", Status: http.StatusNotFound},
		{Outcome: OutcomeFailed, By: "alice", Note: "n", Status: http.StatusCreated},
	} {
		_, err := c.Settle(ctx, in.Key, bad)
		require.Error(t, err, "status %d, %s", bad.Status, bad.Outcome)
	}
	again, err := c.Resume(ctx, in.Key)
	require.NoError(t, err)
	assert.Equal(t, Pending, again.State, "a refused settlement writes nothing")

	_, err = c.Settle(ctx, in.Key, Settlement{Outcome: OutcomeSucceeded, By: "alice", Note: "pay_10 created, its log shows 201", Status: http.StatusCreated})
	require.NoError(t, err)
	resp, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode, "the status the person found, not a made-up 200")
	assert.Equal(t, "manual", resp.Header.Get(SettlementHeader), "a settlement, not the provider's answer")
	assert.True(t, IsLocalReplay(resp))
	assert.Contains(t, readBody(t, resp), "pay_10 created")

	// A 204 is stored without a body, as it must be sent.
	answer, err := settlementAnswer(Settlement{Outcome: OutcomeSucceeded, By: "alice", Note: "seen", Status: http.StatusNoContent})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, answer.Status)
	assert.Empty(t, answer.Body)
	assert.Equal(t, "manual", answer.Header.Get(SettlementHeader))
}

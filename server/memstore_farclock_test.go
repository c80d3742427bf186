package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// The memory store keeps times as int64 nanoseconds, saturated beyond
// 2262. A clock out there saturates too; a record set to outlive it must
// still not be due, or a sweep would forget a completion it must replay.
func TestMemoryStoreClockBeyondTheNanosecondRangeForgetsNothing(t *testing.T) {
	t.Parallel()
	now := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	s := server.NewMemoryStore(server.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	scope := server.Scope{Principal: "p", Method: "POST", Route: "/v1/payments"}

	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)
	n, err := s.Sweep(ctx, 10)
	require.NoError(t, err)
	require.Zero(t, n, "a reservation whose lease ends after the clock is not abandoned")

	require.NoError(t, s.Complete(ctx, server.Completion{Reservation: *res,
		Response: server.Response{Status: 500, Body: []byte("stored")}, Retention: time.Hour}))
	n, err = s.Sweep(ctx, 10)
	require.NoError(t, err)
	require.Zero(t, n, "a completion whose retention ends after the clock is not due")

	again, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.Nil(t, again, "the key is not free")
	require.NotNil(t, rec)
	require.Equal(t, "stored", string(rec.Response.Body))
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// RunBackendLost checks that a store whose backend goes away while it is
// open fails every call with an error (which the server answers with
// 503) instead of hanging or panicking. s must reach its backend through
// something cut can sever, such as a testenv.Proxy; cut is called once s
// has completed one reservation.
func RunBackendLost(t *testing.T, s server.Store, cut func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	scope := NewScope()
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)

	cut()

	_, _, err = s.Reserve(ctx, scope, "k2", "fp", time.Minute)
	assert.Error(t, err, "reserve")
	assert.Error(t, s.Complete(ctx, server.Completion{Reservation: *res, Response: JSONResponse("{}"), Retention: time.Hour}), "complete")
	assert.Error(t, s.Release(ctx, *res), "release")
	_, err = s.Sweep(ctx, 10)
	assert.Error(t, err, "sweep")
	assert.NoError(t, ctx.Err(), "the calls must fail on their own, not by running into the deadline")
}

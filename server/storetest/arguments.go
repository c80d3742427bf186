package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// AssertRejectsBadCompletions checks that s refuses a completion without a
// retention or without a status, with an error that names the missing
// field.
func AssertRejectsBadCompletions(t *testing.T, s server.Store) {
	t.Helper()
	ctx := t.Context()
	res, _, err := s.Reserve(ctx, NewScope(), "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.ErrorContains(t, s.Complete(ctx, server.Completion{Reservation: *res, Response: JSONResponse("{}")}), "retention")
	assert.ErrorContains(t, s.Complete(ctx, server.Completion{Reservation: *res, Retention: time.Hour}), "status")
}

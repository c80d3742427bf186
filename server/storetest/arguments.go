package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// AssertRejectsBadCompletions checks that s refuses a completion without a
// retention or without a status, with an error that names the missing
// field, both on its own and passed along with a payment.
func AssertRejectsBadCompletions(t *testing.T, s testserver.Store) {
	t.Helper()
	ctx := t.Context()
	scope := NewScope()
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: JSONResponse("{}")}), "retention")
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
	assert.ErrorContains(t, s.CreatePayment(ctx, NewPayment(scope.Principal), &testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
}

// Package storetest is the contract every testserver.Store must meet:
// server/storetest's contract for the idempotency records, and the
// payments API's effects committed with their keys.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

// The parts of server/storetest that need no payments.
type ResponseSeed = storetest.ResponseSeed

var (
	FuzzResponseRoundTrip    = storetest.FuzzResponseRoundTrip
	BenchmarkReserveComplete = storetest.BenchmarkReserveComplete
	NewScope                 = storetest.NewScope
	JSONResponse             = storetest.JSONResponse
)

// Run runs server/storetest's contract, then the payments cases, against
// stores that open returns.
func Run(t *testing.T, open func(t *testing.T) testserver.Store) {
	t.Helper()
	storetest.Run(t, func(t *testing.T) server.Store { return open(t) })
	runEffects(t, open)
}

// RunReservationGrace is server/storetest's, for a testserver.Store.
func RunReservationGrace(t *testing.T, open func(t *testing.T, grace time.Duration) testserver.Store) {
	t.Helper()
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) server.Store { return open(t, grace) })
}

// AssertRejectsBadCompletions is server/storetest's, and a completion
// without a status passed along with a payment is refused too.
func AssertRejectsBadCompletions(t *testing.T, s testserver.Store) {
	t.Helper()
	storetest.AssertRejectsBadCompletions(t, s)
	ctx := t.Context()
	scope := NewScope()
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	if assert.NoError(t, err) && assert.NotNil(t, res) {
		assert.ErrorContains(t, s.CreatePayment(ctx, NewPayment(scope.Principal), &testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
	}
}

// RunBackendLost is server/storetest's; once the backend is cut the
// payments calls fail too.
func RunBackendLost(t *testing.T, s testserver.Store, cut func()) {
	t.Helper()
	storetest.RunBackendLost(t, s, cut)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	scope := NewScope()
	assert.Error(t, s.CreatePayment(ctx, NewPayment(scope.Principal), nil), "create payment")
	_, err := s.ListPayments(ctx, scope.Principal)
	assert.Error(t, err, "list payments")
	_, err = s.CountPayments(ctx)
	assert.Error(t, err, "count payments")
	assert.NoError(t, ctx.Err(), "the calls must fail on their own, not by running into the deadline")
}

package storetest

import (
	"crypto/rand"
	"errors"
	srvtest "github.com/idemkit/idem/server/storetest"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// runEffects runs the payments API's cases: each effect with the
// completion of its key, in one atomic step.
func runEffects(t *testing.T, open func(t *testing.T) testserver.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s testserver.Store)
	}{
		{"Payments", testPayments},
		{"PaymentWithCompletion", testPaymentWithCompletion},
		{"PaymentWithFencedCompletion", testPaymentWithFencedCompletion},
		{"DuplicatePayment", testDuplicatePayment},
		{"Operations", testOperations},
		{"OperationWithCompletion", testOperationWithCompletion},
		{"ConcurrentPaymentCompletion", testConcurrentPaymentCompletion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			require.NotNil(t, s, "open returned a nil store")
			tc.run(t, s)
		})
	}
}

func newPayment(principal string, created time.Time, amount int64) testserver.Payment {
	return testserver.Payment{
		ID:        "pay_" + rand.Text(),
		Principal: principal,
		Amount:    amount,
		Currency:  "EUR",
		Reference: "order-42",
		Status:    "succeeded",
		Created:   created.UTC().Truncate(time.Millisecond),
	}
}

func assertSamePayment(t *testing.T, want, got testserver.Payment) {
	t.Helper()
	assert.True(t, want.Created.Equal(got.Created), "created: want %v, got %v", want.Created, got.Created)
	want.Created, got.Created = time.Time{}, time.Time{}
	assert.Equal(t, want, got)
}

func testPayments(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	principal := srvtest.UniqueScope(t).Principal
	countBefore, err := s.CountPayments(ctx)
	require.NoError(t, err)

	list, err := s.ListPayments(ctx, principal)
	require.NoError(t, err)
	assert.Empty(t, list)

	base := time.Now()
	var created []testserver.Payment
	for i := range 3 {
		p := newPayment(principal, base.Add(time.Duration(i)*time.Second), int64(100+i))
		require.NoError(t, s.CreatePayment(ctx, p, nil))
		created = append(created, p)
	}

	got, err := s.GetPayment(ctx, principal, created[1].ID)
	require.NoError(t, err)
	assertSamePayment(t, created[1], got)

	_, err = s.GetPayment(ctx, principal+"_other", created[1].ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound, "another principal must not see the payment")
	_, err = s.GetPayment(ctx, principal, "pay_missing")
	assert.ErrorIs(t, err, testserver.ErrNotFound)

	list, err = s.ListPayments(ctx, principal)
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, p := range list {
		assertSamePayment(t, created[2-i], p) // newest first
	}
	others, err := s.ListPayments(ctx, principal+"_other")
	require.NoError(t, err)
	assert.Empty(t, others)

	countAfter, err := s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, countBefore+3, countAfter)
}

func testPaymentWithCompletion(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	scope, key, fp := srvtest.UniqueScope(t), srvtest.NewKey(), srvtest.FingerprintOf(`{"amount":100}`)
	res := srvtest.MustReserve(t, s, scope, key, fp, longLease)
	p := newPayment(scope.Principal, time.Now(), 100)
	want := srvtest.SampleResponse(`{"id":"` + p.ID + `"}`)
	want.ResourceID = p.ID
	c := &testserver.Completion{Reservation: res, Response: want, Retention: longRetention}
	require.NoError(t, s.CreatePayment(ctx, p, c))

	got, err := s.GetPayment(ctx, scope.Principal, p.ID)
	require.NoError(t, err)
	assertSamePayment(t, p, got)
	rec := srvtest.MustFind(t, s, scope, key, fp)
	assert.Equal(t, testserver.StateCompleted, rec.State)
	srvtest.AssertSameResponse(t, want, rec.Response)
	assert.ErrorIs(t, srvtest.Complete(t, s, res, srvtest.SampleResponse("{}"), longRetention), testserver.ErrFenced)
}

func testPaymentWithFencedCompletion(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	scope, key, fp := srvtest.UniqueScope(t), srvtest.NewKey(), srvtest.FingerprintOf(`{"amount":100}`)
	res := srvtest.MustReserve(t, s, scope, key, fp, longLease)
	require.NoError(t, s.Release(ctx, res))
	countBefore, err := s.CountPayments(ctx)
	require.NoError(t, err)

	p := newPayment(scope.Principal, time.Now(), 100)
	c := &testserver.Completion{Reservation: res, Response: srvtest.SampleResponse("{}"), Retention: longRetention}
	require.ErrorIs(t, s.CreatePayment(ctx, p, c), testserver.ErrFenced)

	_, err = s.GetPayment(ctx, scope.Principal, p.ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound, "a fenced completion must not leave the payment behind")
	countAfter, err := s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, countBefore, countAfter)
	srvtest.MustReserve(t, s, scope, key, fp, longLease) // and must not complete the key
}

func testDuplicatePayment(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	scope, key, fp := srvtest.UniqueScope(t), srvtest.NewKey(), srvtest.FingerprintOf(`{"amount":100}`)
	p := newPayment(scope.Principal, time.Now(), 100)
	require.NoError(t, s.CreatePayment(ctx, p, nil))

	res := srvtest.MustReserve(t, s, scope, key, fp, longLease)
	dup := p
	dup.Amount = 999
	c := &testserver.Completion{Reservation: res, Response: srvtest.SampleResponse("{}"), Retention: longRetention}
	require.Error(t, s.CreatePayment(ctx, dup, c), "a payment id is unique")

	got, err := s.GetPayment(ctx, scope.Principal, p.ID)
	require.NoError(t, err)
	assertSamePayment(t, p, got)
	assert.Equal(t, testserver.StateReserved, srvtest.MustFind(t, s, scope, key, fp).State,
		"a failed insert must not complete the key")
}

func newOperation(principal string) testserver.Operation {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return testserver.Operation{
		ID:        "op_" + rand.Text(),
		Principal: principal,
		Kind:      "payout",
		Amount:    500,
		Currency:  "EUR",
		Reference: "payout-7",
		Created:   now,
		SettleAt:  now.Add(time.Minute),
	}
}

func assertSameOperation(t *testing.T, want, got testserver.Operation) {
	t.Helper()
	assert.True(t, want.Created.Equal(got.Created), "created: want %v, got %v", want.Created, got.Created)
	assert.True(t, want.SettleAt.Equal(got.SettleAt), "settle at: want %v, got %v", want.SettleAt, got.SettleAt)
	want.Created, got.Created, want.SettleAt, got.SettleAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, want, got)
}

func testOperations(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	principal := srvtest.UniqueScope(t).Principal
	op := newOperation(principal)
	require.NoError(t, s.CreateOperation(ctx, op, nil))

	got, err := s.GetOperation(ctx, principal, op.ID)
	require.NoError(t, err)
	assertSameOperation(t, op, got)

	_, err = s.GetOperation(ctx, principal+"_other", op.ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound)
	_, err = s.GetOperation(ctx, principal, "op_missing")
	assert.ErrorIs(t, err, testserver.ErrNotFound)
	require.Error(t, s.CreateOperation(ctx, op, nil), "an operation id is unique")
}

func testOperationWithCompletion(t *testing.T, s testserver.Store) {
	ctx := t.Context()
	scope, key, fp := srvtest.UniqueScope(t), srvtest.NewKey(), srvtest.FingerprintOf(`{"amount":500}`)
	scope.Route = "/v1/payouts"
	res := srvtest.MustReserve(t, s, scope, key, fp, longLease)
	op := newOperation(scope.Principal)
	want := testserver.Response{
		Status:     http.StatusAccepted,
		Header:     http.Header{"Location": {"/v1/operations/" + op.ID}, "Retry-After": {"1"}},
		Body:       []byte(`{"id":"` + op.ID + `"}`),
		ResourceID: op.ID,
	}

	stale := res
	stale.Token = "stale"
	require.ErrorIs(t, s.CreateOperation(ctx, op, &testserver.Completion{Reservation: stale, Response: want, Retention: longRetention}), testserver.ErrFenced)
	_, err := s.GetOperation(ctx, scope.Principal, op.ID)
	require.ErrorIs(t, err, testserver.ErrNotFound, "a fenced completion must not leave the operation behind")

	require.NoError(t, s.CreateOperation(ctx, op, &testserver.Completion{Reservation: res, Response: want, Retention: longRetention}))
	_, err = s.GetOperation(ctx, scope.Principal, op.ID)
	require.NoError(t, err)
	srvtest.AssertSameResponse(t, want, srvtest.MustFind(t, s, scope, key, fp).Response)
}

func testConcurrentPaymentCompletion(t *testing.T, s testserver.Store) {
	const workers = 16
	ctx := t.Context()
	scope, key, fp := srvtest.UniqueScope(t), srvtest.NewKey(), srvtest.FingerprintOf(`{"amount":100}`)
	res := srvtest.MustReserve(t, s, scope, key, fp, longLease)

	start := make(chan struct{})
	errs := make(chan error, workers)
	for range workers {
		go func() {
			<-start
			p := newPayment(scope.Principal, time.Now(), 100)
			errs <- s.CreatePayment(ctx, p, &testserver.Completion{Reservation: res, Response: srvtest.SampleResponse("{}"), Retention: longRetention})
		}()
	}
	close(start)
	succeeded := 0
	for range workers {
		err := <-errs
		switch {
		case err == nil:
			succeeded++
		case errors.Is(err, testserver.ErrFenced):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	assert.Equal(t, 1, succeeded, "one reservation completes one payment")
	list, err := s.ListPayments(ctx, scope.Principal)
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
	"github.com/idemkit/idem/server"
)

// Reservations commit without waiting for the log flush, so a database
// crash may lose the latest ones. These tests lose one by hand, as such
// a crash would leave the table, and check that no effect can commit on
// it: the argument of docs/PROTOCOL.md, "One durable commit per request".

func newPayment(scope server.Scope, id string) testserver.Payment {
	return testserver.Payment{ID: id, Principal: scope.Principal, Amount: 1000, Currency: "EUR",
		Status: "succeeded", Created: time.Now().UTC()}
}

func completionOf(res *server.Reservation) *testserver.Completion {
	return &testserver.Completion{Reservation: *res, Response: storetest.JSONResponse(`{}`), Retention: time.Hour}
}

// A reservation lost to a crash leaves no row: its completion is fenced
// and writes no payment; a retry reserves the key again and pays once.
func TestLostReservationFencesItsCompletion(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	s := openStore(t, dsn, schema)
	ctx := t.Context()
	scope := storetest.NewScope()

	lost, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, lost)
	exec(t, dsn, fmt.Sprintf(`DELETE FROM %s WHERE key = 'k'`, table(schema, "idempotency_records")))

	err = s.CreatePayment(ctx, newPayment(scope, "pay_lost"), completionOf(lost))
	require.ErrorIs(t, err, server.ErrFenced)
	n, err := s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing committed on a lost reservation")

	retry, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, retry, "the retry finds the key free")
	require.NoError(t, s.CreatePayment(ctx, newPayment(scope, "pay_retry"), completionOf(retry)))
	require.ErrorIs(t, s.CreatePayment(ctx, newPayment(scope, "pay_late"), completionOf(lost)), server.ErrFenced,
		"the lost owner's late completion still finds no reservation of its own")
	n, err = s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// A takeover lost to a crash leaves the previous owner's expired
// reservation: the lost owner is fenced, the previous one may still
// complete, and the key gets one payment.
func TestLostTakeoverLeavesThePreviousOwner(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	s := openStore(t, dsn, schema)
	ctx := t.Context()
	scope := storetest.NewScope()

	first, _, err := s.Reserve(ctx, scope, "k", "fp", time.Millisecond)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	second, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, second, "the lease ended: a retry takes the key over")
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`UPDATE %s SET token = $1, lease_expires = clock_timestamp() - interval '1 second' WHERE key = 'k'`,
		table(schema, "idempotency_records")), first.Token)
	require.NoError(t, err)

	require.ErrorIs(t, s.CreatePayment(ctx, newPayment(scope, "pay_second"), completionOf(second)), server.ErrFenced)
	require.NoError(t, s.CreatePayment(ctx, newPayment(scope, "pay_first"), completionOf(first)))
	n, err := s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, server.StateCompleted, rec.State)
}

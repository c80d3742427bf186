package saga_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/saga"
)

// pgClient is a client on the Postgres keystore in schema, with a pool
// of its own, as another worker of a fleet would have.
func pgClient(t *testing.T, dsn, schema string) *idem.Client {
	t.Helper()
	store, err := pgkeystore.Open(context.Background(), dsn, &pgkeystore.Options{Schema: schema})
	require.NoError(t, err)
	c, err := idem.New(append(fastOptions(), idem.WithStore(store))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A run begun by one worker of a fleet is taken up by another from the
// shared Postgres keystore: the charge replays, the refund is made once.
func TestFleetResumesARunFromPostgres(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_saga_")
	srv := idemtest.NewServer(t)

	a := pgClient(t, dsn, schema)
	sa, err := saga.New(a)
	require.NoError(t, err)
	r, err := sa.Run(bg, "order-pg")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-pg"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	require.NoError(t, a.Close()) // worker A goes away

	b := pgClient(t, dsn, schema)
	sb, err := saga.New(b)
	require.NoError(t, err)
	sent := srv.Requests()
	r2, err := sb.Run(bg, "order-pg")
	require.NoError(t, err)
	var undone []string
	err = checkout(bg, r2, srv.URL, &undone, 0)
	require.ErrorIs(t, err, idem.ErrFinalFailure)
	assert.Equal(t, sent+1, srv.Requests(), "the charge replayed; only the shipment went out")
	require.NoError(t, r2.Fail(bg, err))
	assert.Equal(t, saga.Compensated, r2.State())
	assert.Equal(t, []string{"reserve", "charge"}, undone)
	assert.Equal(t, 1, effects(srv, "charge-order-pg"))
	assert.Equal(t, 1, effects(srv, "refund-charge-order-pg"))

	// A third worker lists the run as compensated; a Fail there does
	// nothing more.
	c := pgClient(t, dsn, schema)
	sc, err := saga.New(c)
	require.NoError(t, err)
	list, err := sc.List(bg)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, saga.Compensated, list[0].State)
	stale, err := sc.Resume(bg, "order-pg")
	require.NoError(t, err)
	sent = srv.Requests()
	require.NoError(t, stale.Fail(bg, errors.New("again")), "a compensated run stays compensated")
	assert.Equal(t, sent, srv.Requests())
}

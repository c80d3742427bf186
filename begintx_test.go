package idem

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// txKeystore is a Postgres keystore in a schema of the test's own and the
// application's pool on the same database, with an orders table in that
// schema; it skips the test without IDEM_TEST_POSTGRES.
type txKeystore struct {
	dsn    string
	opt    keystore.OpenOption
	schema string
	pool   *pgxpool.Pool
	orders string
}

func newTxKeystore(t *testing.T) *txKeystore {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_begintx_")
	pool, err := pgxpool.New(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	_, err = pool.Exec(t.Context(), "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), "CREATE TABLE "+orders+" (id text PRIMARY KEY, intent_key text NOT NULL, state text NOT NULL)")
	require.NoError(t, err)
	return &txKeystore{dsn: dsn, opt: pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema}), schema: schema, pool: pool, orders: orders}
}

// client is a fleet process on the keystore.
func (k *txKeystore) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	return worker(t, k.dsn, k.opt, opts...)
}

// placeOrder writes the order and the intent of its charge in one
// transaction, and commits it unless rollback.
func (k *txKeystore) placeOrder(t *testing.T, c *Client, providerURL, orderID string, rollback bool) *Intent {
	t.Helper()
	ctx := t.Context()
	tx, err := k.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(ctx, "INSERT INTO "+k.orders+" (id, intent_key, state) VALUES ($1, $2, 'pending')", orderID, DeriveKey("charge", orderID))
	require.NoError(t, err)
	in, err := c.BeginTx(ctx, tx, "orders/"+orderID+"/charge", paymentRequest(t, providerURL, 1500, orderID),
		WithIntentKey(DeriveKey("charge", orderID)))
	require.NoError(t, err)
	assert.Equal(t, Pending, in.State)
	if !rollback {
		require.NoError(t, tx.Commit(ctx))
	}
	return in
}

func (k *txKeystore) orderCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, k.pool.QueryRow(t.Context(), "SELECT count(*) FROM "+k.orders).Scan(&n))
	return n
}

// The order and the intent commit together; Do runs after the commit,
// with the credentials BeginTx was given, and pays once.
func TestBeginTxCommitsTheIntentWithTheOrder(t *testing.T) {
	t.Parallel()
	k := newTxKeystore(t)
	provider := idemtest.NewServer(t)
	api := k.client(t)
	ctx := t.Context()

	in := k.placeOrder(t, api, provider.URL, "order-1", false)
	assert.Equal(t, DeriveKey("charge", "order-1"), in.Key)
	assert.Equal(t, "orders/order-1/charge", in.Name)

	resp, err := api.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, Succeeded, in.State)
	assert.Len(t, provider.Payments(testToken), 1, "sent with BeginTx's credentials")

	// A retried handler begins the same intent again, in a new
	// transaction: the same key, replayed, never a second payment.
	tx, err := k.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	again, err := api.BeginTx(ctx, tx, "orders/order-1/charge", paymentRequest(t, provider.URL, 1500, "order-1"),
		WithIntentKey(DeriveKey("charge", "order-1")))
	require.NoError(t, err)
	assert.Equal(t, in.Key, again.Key)
	assert.Equal(t, Succeeded, again.State)
	require.NoError(t, tx.Commit(ctx))
	_, err = api.Do(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, 1, provider.PaymentCount())

	// Another payload under the name is a conflict, in a transaction too.
	tx, err = k.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = api.BeginTx(ctx, tx, "orders/order-1/charge", paymentRequest(t, provider.URL, 9999, "order-1"))
	require.ErrorIs(t, err, ErrIntentConflict)
}

// Rolled back, neither the order nor the intent exists: Do says so and
// sends nothing, and the Client keeps nothing of it.
func TestBeginTxRolledBackLeavesNothing(t *testing.T) {
	t.Parallel()
	k := newTxKeystore(t)
	provider := idemtest.NewServer(t)
	api := k.client(t)

	in := k.placeOrder(t, api, provider.URL, "order-2", true)
	_, err := api.Do(t.Context(), in)
	require.ErrorIs(t, err, keystore.ErrNotFound)
	assert.Contains(t, err.Error(), "rolled back, or has not committed yet")
	assert.Zero(t, provider.Requests())
	assert.Zero(t, k.orderCount(t))
	assert.Nil(t, api.local.secrets(in.Key), "no secrets kept for an intent that never existed")
	assert.Empty(t, api.local.unsentKeys())
}

// Misuse is refused with a typed error before anything is written.
func TestBeginTxRefusesWhatItCannotWriteIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := paymentRequest(t, "http://127.0.0.1:1", 100, "r")

	bolt := newTestClient(t, WithBoltStore(filepath.Join(t.TempDir(), "intents.db"), nil))
	_, err := bolt.BeginTx(ctx, struct{}{}, "n", req)
	require.ErrorIs(t, err, ErrTxUnsupported)
	assert.Contains(t, err.Error(), "Postgres keystore")
	_, err = newTestClient(t).BeginTx(ctx, struct{}{}, "n", req)
	require.ErrorIs(t, err, ErrTxUnsupported)

	k := newTxKeystore(t)
	api := k.client(t)
	_, err = api.BeginTx(ctx, nil, "n", req)
	require.ErrorIs(t, err, ErrInvalidRequest)
	_, err = api.BeginTx(ctx, "a string", "n", req)
	require.ErrorIs(t, err, keystore.ErrForeignTx)
	tx, err := k.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = api.BeginTx(ctx, tx, "n", req, WithAdopt("some-key"))
	require.ErrorIs(t, err, ErrInvalidRequest)
}

// The API process commits the order and its intent and dies before Do: a
// second process's ClaimPending takes the intent up once the claim has
// run out, and pays once; the first process, back, replays that answer.
func TestBeginTxIntentOfADeadRequestIsCompletedByTheFleet(t *testing.T) {
	t.Parallel()
	k := newTxKeystore(t)
	provider := idemtest.NewServer(t)
	const lease = 300 * time.Millisecond
	api := k.client(t, WithClaimLease(lease))
	completer := k.client(t, WithClaimLease(lease), WithRequestEditor(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+testToken) // a resuming process brings its credentials
		return nil
	}))
	ctx := t.Context()

	in := k.placeOrder(t, api, provider.URL, "order-3", false)
	// The API dies here, before Do. Its claim keeps the intent from the
	// fleet until the lease ends.
	taken, err := completer.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, taken, "claimed for its creator, the dead API")

	require.Eventually(t, func() bool {
		taken, err = completer.ClaimPending(ctx, 10)
		return err == nil && len(taken) == 1
	}, 10*time.Second, 20*time.Millisecond, "the intent returns to the fleet when the lease ends")
	assert.Equal(t, in.Key, taken[0].Key)
	resp, err := completer.Do(ctx, taken[0])
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, provider.PaymentCount())

	replayed, err := api.Do(ctx, in)
	require.NoError(t, err)
	assert.True(t, IsReplay(replayed))
	assert.Equal(t, 1, provider.PaymentCount(), "one payment at the provider")
	assert.Equal(t, 1, k.orderCount(t))
}

package pgstore_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// The completion and the effect travel in one batch: a stale owner's
// batch writes nothing, a failing effect rolls the completion back, and
// the owner's batch commits both.
func TestCompleteBatchFencesAndRollsBack(t *testing.T) {
	t.Parallel()
	store, pool, orders := openOnPool(t)
	ctx := t.Context()
	scope := server.Scope{Principal: "p", Method: http.MethodPost, Route: "/orders"}
	insert := func(res server.Reservation, ids ...string) error {
		b := &pgx.Batch{}
		for _, id := range ids {
			b.Queue("INSERT INTO "+orders+" (id) VALUES ($1)", id)
		}
		c := server.Completion{Reservation: res, Response: server.Response{Status: 201}, Retention: time.Hour}
		return store.CompleteBatch(ctx, c, b)
	}
	stale, _, err := store.Reserve(ctx, scope, "k", "fp", time.Millisecond)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	fresh, _, err := store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, fresh, "the lease ended: a retry takes the key over")

	assert.ErrorIs(t, insert(*stale, "stale"), server.ErrFenced)
	assert.Equal(t, 0, countOrders(t, pool, orders), "the fenced owner wrote nothing")

	err = insert(*fresh, "dup", "dup")
	require.Error(t, err, "the second insert violates the primary key")
	assert.NotErrorIs(t, err, server.ErrFenced)
	assert.Equal(t, 0, countOrders(t, pool, orders), "the first insert rolled back with the second")
	_, rec, err := store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, server.StateReserved, rec.State, "the completion rolled back with the effect")

	require.NoError(t, insert(*fresh, "ord_1", "ord_2"))
	_, rec, err = store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, server.StateCompleted, rec.State)
	assert.Equal(t, 2, countOrders(t, pool, orders))
	assert.ErrorIs(t, insert(*fresh, "again"), server.ErrFenced, "a completed key is not completed twice")
}

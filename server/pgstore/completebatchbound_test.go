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

// The completion of CompleteBatch sets the transaction's bound itself:
// the effect's statements run under lock_timeout and statement_timeout
// of the completion's Timeout, and without a Timeout under the
// session's own settings.
func TestCompleteBatchBoundsTheEffectsThatFollowIt(t *testing.T) {
	t.Parallel()
	store, _, _ := openOnPool(t)
	ctx := t.Context()
	scope := server.Scope{Principal: "p", Method: http.MethodPost, Route: "/orders"}
	for _, tc := range []struct {
		key     string
		timeout time.Duration
		want    string
	}{{"bounded", 1500 * time.Millisecond, "1500ms"}, {"unbounded", 0, "0"}} {
		res, _, err := store.Reserve(ctx, scope, tc.key, "fp", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, res)
		var lock, statement string
		b := &pgx.Batch{}
		b.Queue(`SELECT current_setting('lock_timeout'), current_setting('statement_timeout')`).QueryRow(func(row pgx.Row) error {
			return row.Scan(&lock, &statement)
		})
		c := server.Completion{Reservation: *res, Response: server.Response{Status: 201}, Retention: time.Hour, Timeout: tc.timeout}
		require.NoError(t, store.CompleteBatch(ctx, c, b))
		_, rec, err := store.Reserve(ctx, scope, tc.key, "fp", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, server.StateCompleted, rec.State, tc.key)
		assert.Equal(t, tc.want, lock, "%s: lock_timeout inside the batch", tc.key)
		assert.Equal(t, tc.want, statement, "%s: statement_timeout inside the batch", tc.key)
	}
}

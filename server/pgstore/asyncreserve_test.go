package pgstore

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// The reservation turns synchronous_commit off for its own transaction
// only: inside it the setting reads off, after it the pooled session
// reads its own setting again. Without WithAsyncReservations it stays on.
func TestAsyncReservationsTurnOffTheFlushWaitForTheirTransactionOnly(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_")
	for _, tc := range []struct {
		async  bool
		inside string
	}{{true, "off"}, {false, "on"}} {
		s, err := Open(t.Context(), dsn, WithSchema(schema), WithAsyncReservations(tc.async), WithMaxConns(1))
		require.NoError(t, err)
		defer s.Close()
		ctx := t.Context()
		conn, err := s.Pool().Acquire(ctx)
		require.NoError(t, err)
		var before, inside, after string
		require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&before))
		require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var reserved bool
			key := "k-" + time.Now().Format(time.RFC3339Nano)
			if err := tx.QueryRow(ctx, s.q.reserve, "p", http.MethodPost, "/r", key, "fp", "token", int64(60e6)).Scan(&reserved); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inside)
		}))
		require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after))
		conn.Release()
		assert.Equal(t, "on", before, "the session's own setting")
		assert.Equal(t, tc.inside, inside, "async=%v: inside the reservation's transaction", tc.async)
		assert.Equal(t, before, after, "async=%v: the session keeps its setting", tc.async)
	}
}

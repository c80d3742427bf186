package pgstore

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
)

// A takeover is a reservation too: with WithAsyncReservations it turns
// synchronous_commit off for its own transaction, and without it leaves
// the setting on.
func TestAsyncReservationsCoverTheTakeover(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_")
	scope := server.Scope{Principal: "p", Method: http.MethodPost, Route: "/r"}
	for _, tc := range []struct {
		async  bool
		inside string
	}{{true, "off"}, {false, "on"}} {
		s, err := Open(t.Context(), dsn, WithSchema(schema), WithAsyncReservations(tc.async))
		require.NoError(t, err)
		defer s.Close()
		ctx := t.Context()
		key := "k-" + tc.inside
		stale, _, err := s.Reserve(ctx, scope, key, "fp", time.Microsecond)
		require.NoError(t, err)
		require.NotNil(t, stale)
		time.Sleep(2 * time.Millisecond)
		var inside string
		require.NoError(t, pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
			var took bool
			if err := tx.QueryRow(ctx, s.q.takeover, scope.Principal, scope.Method, scope.Route, key, "fp", "new-token", int64(60e6)).Scan(&took); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inside)
		}))
		assert.Equal(t, tc.inside, inside, "async=%v: inside the takeover's transaction", tc.async)
		_, rec, err := s.Reserve(ctx, scope, key, "fp", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, "new-token", rec.Token, "the takeover committed")
	}
}

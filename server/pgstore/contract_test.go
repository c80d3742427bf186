package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
	"github.com/idemkit/idem/server/storetest"
)

// open is a store on a schema of the test's own.
func open(t *testing.T, dsn string, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	opts = append([]pgstore.Option{pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_"))}, opts...)
	s, err := pgstore.Open(t.Context(), dsn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	storetest.Run(t, func(t *testing.T) server.Store { return open(t, dsn) })
	storetest.RunLegacyFingerprints(t, func(t *testing.T) server.Store { return open(t, dsn) })
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) server.Store {
		return open(t, dsn, pgstore.WithReservationGrace(grace))
	})
}

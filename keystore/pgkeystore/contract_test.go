package pgkeystore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, postgresOpener(testenv.PostgresDSN(t)))
}

// postgresOpener returns a function that opens a store on dsn in a schema
// of the calling test's own, closed when that test ends.
func postgresOpener(dsn string) func(t *testing.T) keystore.Store {
	return func(t *testing.T) keystore.Store {
		t.Helper()
		s, err := pgkeystore.Open(context.Background(), dsn,
			&pgkeystore.Options{Schema: testenv.PostgresSchema(t, dsn, "idem_ksc_")})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

package keystore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	storetest.Run(t, func(t *testing.T) keystore.Store {
		s, err := keystore.OpenPostgres(context.Background(), dsn,
			&keystore.PostgresOptions{Schema: testenv.PostgresSchema(t, dsn, "idem_ksc_")})
		require.NoError(t, err)
		return s
	})
}

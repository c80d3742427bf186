package keystore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("IDEM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("IDEM_TEST_POSTGRES is not set; set it to a postgres:// DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the Postgres keystore contract")
	}
	storetest.Run(t, func(t *testing.T) keystore.Store {
		s, err := keystore.OpenPostgres(context.Background(), dsn,
			&keystore.PostgresOptions{Schema: postgresContractSchema(t, dsn)})
		require.NoError(t, err)
		return s
	})
}

// postgresContractSchema names a fresh schema for one subtest and drops it
// when the subtest ends, so parallel tests sharing the database stay apart.
func postgresContractSchema(t *testing.T, dsn string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "idem_ksc_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

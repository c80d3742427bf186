package keystore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

func TestOpenPathIsBolt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.db")
	st, err := Open(context.Background(), path, WithBoltOptions(&BoltOptions{NoSync: true}), WithPostgresOptions(nil))
	require.NoError(t, err)
	defer st.Close()
	b, ok := st.(*Bolt)
	require.True(t, ok, "a path opens a bbolt keystore, got %T", st)
	assert.Equal(t, path, b.Path())
	assert.FileExists(t, path)
}

func TestOpenPostgresURLIsPostgres(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	dsn := testenv.PostgresDSN(t)
	st, err := Open(context.Background(), dsn, WithPostgresOptions(&PostgresOptions{Schema: schema}))
	require.NoError(t, err)
	defer st.Close()
	_, ok := st.(Claimer)
	assert.True(t, ok, "a postgres:// URL opens a keystore that claims, got %T", st)
	assert.True(t, IsPostgresLocation(dsn))
}

func TestOpenRejectsWhatItCannotOpen(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"", "  ", "mysql://app:s3cret@db/x", "file:///tmp/x.db", "redis://h:6379"} {
		_, err := Open(context.Background(), loc)
		require.Error(t, err, "%q", loc)
		assert.Contains(t, err.Error(), "want a file path or a postgres://", "%q", loc)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.False(t, IsPostgresLocation(loc))
	}
}

func TestOpenUnreachablePostgresHidesThePassword(t *testing.T) {
	t.Parallel()
	loc := "postgresql://app:s3cret@" + testenv.ClosedAddr(t) + "/db?sslmode=disable&connect_timeout=2"
	_, err := Open(context.Background(), loc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keystore postgresql://app:xxxxx@")
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestRedactLocation(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "/var/lib/idem.db", RedactLocation("/var/lib/idem.db"))
	assert.Equal(t, "postgres://app:xxxxx@db:5432/pay", RedactLocation("postgres://app:pw@db:5432/pay"))
	assert.Equal(t, "postgres://db/pay", RedactLocation("postgres://db/pay"))
}

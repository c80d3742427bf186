package pgkeystore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

func TestOpenPostgresURLIsPostgres(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	dsn := testenv.PostgresDSN(t)
	st, err := keystore.Open(context.Background(), dsn, WithOptions(&Options{Schema: schema}))
	require.NoError(t, err)
	defer st.Close()
	_, ok := st.(keystore.Claimer)
	assert.True(t, ok, "a postgres:// URL opens a keystore that claims, got %T", st)
	assert.True(t, keystore.IsPostgresLocation(dsn))
}

func TestOpenUnreachablePostgresHidesThePassword(t *testing.T) {
	t.Parallel()
	loc := "postgresql://app:s3cret@" + testenv.ClosedAddr(t) + "/db?sslmode=disable&connect_timeout=2"
	_, err := keystore.Open(context.Background(), loc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keystore postgresql://app:xxxxx@")
	assert.NotContains(t, err.Error(), "s3cret")
}

// A DSN of two hosts fails twice; pgx joins the failures with newlines,
// and the keystore's error keeps to one line.
func TestOpenUnreachableHostsIsOneLine(t *testing.T) {
	t.Parallel()
	loc := "postgres://app:s3cret@" + testenv.ClosedAddr(t) + "," + testenv.ClosedAddr(t) + "/db?sslmode=disable&connect_timeout=2"
	_, err := Open(context.Background(), loc, nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\n")
	assert.NotContains(t, err.Error(), "s3cret")
	assert.Contains(t, err.Error(), "; ", "both failures are named")
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	base := errors.New("failed to connect to `user=app database=db`:\n\t127.0.0.1:1: refused\n\t[::1]:1: refused")
	got := oneLine(base)
	assert.Equal(t, "failed to connect to `user=app database=db`: 127.0.0.1:1: refused; [::1]:1: refused", got.Error())
	assert.ErrorIs(t, got, base)
	plain := errors.New("one line")
	assert.Same(t, plain, oneLine(plain))
}

package pgstore

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// newSchema returns a schema of the test's own, dropped when it ends.
func newSchema(tb testing.TB, dsn string) string {
	tb.Helper()
	return testenv.PostgresSchema(tb, dsn, "idemtest_")
}

// openStore opens a store on schema, closed when the test ends.
func openStore(tb testing.TB, dsn, schema string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), dsn, append([]Option{WithSchema(schema)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// exec runs sql on the test database, for setting up faults.
func exec(t *testing.T, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), sql)
	require.NoError(t, err)
}

// dsnVia returns dsn with its host and port replaced by addr.
func dsnVia(t *testing.T, dsn, addr string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(cfg.User, cfg.Password),
		Host:     addr,
		Path:     "/" + cfg.Database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// targetOf returns the host:port dsn points at.
func targetOf(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

package pgstore

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testDSN returns the database the tests use, or skips the test.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("IDEM_TEST_POSTGRES")
	if dsn == "" {
		tb.Skip("IDEM_TEST_POSTGRES is not set; set it to a PostgreSQL DSN " +
			"(e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the Postgres store tests")
	}
	return dsn
}

// newSchema returns a schema name no other test uses and drops that schema
// when the test ends, so tests running in parallel (and other packages'
// tests on the same database) never see each other's rows.
func newSchema(tb testing.TB, dsn string) string {
	tb.Helper()
	name := "idemtest_" + strings.ToLower(rand.Text())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
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
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), sql)
	require.NoError(t, err)
}

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// proxy forwards TCP connections to target until cut, which closes the
// listener and every forwarded connection: the database vanishes from the
// client's point of view.
type proxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cutOff   bool
	conns    []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{listener: l, target: target}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

// dsnVia returns dsn with its host and port replaced by the proxy's.
func (p *proxy) dsnVia(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(cfg.User, cfg.Password),
		Host:     p.listener.Addr().String(),
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

func (p *proxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

func (p *proxy) cut() {
	_ = p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

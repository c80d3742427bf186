// Package pgpool builds the connection pool configuration shared by idem's
// PostgreSQL stores (pgkeystore.Store and the reference server's
// pgstore), so both size and time out their pools the same way.
package pgpool

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size when neither the caller nor the DSN's
// pool_max_conns sets one. A store's connections spend their time waiting
// for round trips and commits, not computing, so the pool must cover the
// number of requests in flight, not the number of CPUs: pgxpool's own
// default, max(4, NumCPU), queues a server's concurrent requests behind a
// handful of connections on a small machine. 16 serves 16 concurrent
// requests without queueing and still lets several processes share
// PostgreSQL's default max_connections of 100.
const DefaultMaxConns int32 = 16

// dsnMaxConns is the DSN parameter by which pgxpool sizes its pool.
const dsnMaxConns = "pool_max_conns"

// Config parses dsn (a postgres:// URL or a key=value string) into a pool
// configuration. connectTimeout bounds each new connection when the DSN
// sets no connect_timeout. The pool size is maxConns if positive, else
// the DSN's pool_max_conns if it sets one, else DefaultMaxConns. The error
// quotes the DSN with its password redacted, as pgx does.
func Config(dsn string, connectTimeout time.Duration, maxConns int32) (*pgxpool.Config, error) {
	if maxConns < 0 {
		return nil, fmt.Errorf("max connections must not be negative, got %d", maxConns)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	switch {
	case maxConns > 0:
		cfg.MaxConns = maxConns
	case !setsMaxConns(dsn):
		cfg.MaxConns = DefaultMaxConns
	}
	return cfg, nil
}

// setsMaxConns reports whether dsn sets pool_max_conns. pgxpool removes
// the parameter from the configuration it returns, so the DSN is parsed
// again by pgconn, which keeps it among the runtime parameters.
func setsMaxConns(dsn string) bool {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	_, ok := cfg.RuntimeParams[dsnMaxConns]
	return ok
}

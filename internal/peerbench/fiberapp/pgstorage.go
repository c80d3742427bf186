package fiberapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGStorage is a fiber.Storage on Postgres. The module proxy does not
// serve gofiber/storage/postgres, so this one does what that package
// documents, statement for statement: one table of key (k, VARCHAR(64)),
// value (v, BYTEA) and expiry in Unix seconds (e, BIGINT, 0 for none)
// with an index on e; Get is one SELECT of v and e, Set one INSERT … ON
// CONFLICT (k) DO UPDATE, Delete one DELETE, and a ticker deletes expired
// rows every ten seconds.
type PGStorage struct {
	pool                        *pgxpool.Pool
	sel, ins, del, truncate, gc string
	done                        chan struct{}
	stopped                     chan struct{}
}

// pgGCInterval is how often expired rows go: gofiber/storage's default.
const pgGCInterval = 10 * time.Second

// pgOpTimeout bounds one statement: fiber.Storage's methods take no
// context.
const pgOpTimeout = 30 * time.Second

// pgMaxConns is the pool size unless the DSN's pool_max_conns says
// otherwise: the size idem's pgstore takes, so that neither contender
// waits on a smaller pool (pgxpool's own default is 4 here).
const pgMaxConns = 16

// OpenPGStorage connects to dsn and creates schema.table if missing.
func OpenPGStorage(ctx context.Context, dsn, schema, table string) (*PGStorage, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = pgMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	name := pgx.Identifier{schema, table}.Sanitize()
	for _, q := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{schema}.Sanitize(),
		"CREATE TABLE IF NOT EXISTS " + name + " (k VARCHAR(64) PRIMARY KEY NOT NULL DEFAULT '', v BYTEA NOT NULL, e BIGINT NOT NULL DEFAULT '0')",
		"CREATE INDEX IF NOT EXISTS " + pgx.Identifier{table + "_e"}.Sanitize() + " ON " + name + " (e)",
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, fmt.Errorf("fiber storage: %w", err)
		}
	}
	s := &PGStorage{
		pool:     pool,
		sel:      "SELECT v, e FROM " + name + " WHERE k=$1",
		ins:      "INSERT INTO " + name + " (k, v, e) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET v = $4, e = $5",
		del:      "DELETE FROM " + name + " WHERE k=$1",
		truncate: "TRUNCATE TABLE " + name,
		gc:       "DELETE FROM " + name + " WHERE e <= $1 AND e != 0",
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	go s.gcLoop()
	return s, nil
}

// Get returns key's value, or nil when there is none or it has expired.
func (s *PGStorage) Get(key string) ([]byte, error) {
	if key == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	var v []byte
	var e int64
	if err := s.pool.QueryRow(ctx, s.sel, key).Scan(&v, &e); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	if e != 0 && e <= time.Now().Unix() {
		return nil, nil
	}
	return v, nil
}

// Set stores val under key for exp (0: for ever).
func (s *PGStorage) Set(key string, val []byte, exp time.Duration) error {
	if key == "" || len(val) == 0 {
		return nil
	}
	var e int64
	if exp != 0 {
		e = time.Now().Add(exp).Unix()
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, s.ins, key, val, e, val, e)
	return err
}

// Delete removes key.
func (s *PGStorage) Delete(key string) error {
	if key == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, s.del, key)
	return err
}

// Reset removes every key.
func (s *PGStorage) Reset() error {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, s.truncate)
	return err
}

// Close stops the expiry ticker and the pool.
func (s *PGStorage) Close() error {
	close(s.done)
	<-s.stopped
	s.pool.Close()
	return nil
}

func (s *PGStorage) gcLoop() {
	defer close(s.stopped)
	t := time.NewTicker(pgGCInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
			_, _ = s.pool.Exec(ctx, s.gc, now.Unix())
			cancel()
		}
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/saga"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// service is everything one process of the example holds. Every table
// lives in one PostgreSQL database, so the order, the provider call's
// intent and the inbound key's completion can share transactions.
type service struct {
	cfg        config
	pool       *pgxpool.Pool  // the orders, outbox and receipts
	keys       *pgstore.Store // inbound keys and message ids (server)
	layer      *server.Middleware
	client     *idem.Client // outbound calls: intents and runs in pgkeystore
	saga       *saga.Saga
	sagaSecret []byte
	t          tables
	p          providers
	out        io.Writer
	logMu      sync.Mutex
	closers    []func()
}

func newService(ctx context.Context, cfg config, out io.Writer) (*service, error) {
	s := &service{cfg: cfg, t: newTables(cfg.schema), out: out, sagaSecret: []byte(cfg.secret),
		p: providers{provider: cfg.provider, carrier: cfg.carrier, token: cfg.token}}
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var err error
	if s.pool, err = pgxpool.New(octx, cfg.dsn); err == nil {
		err = s.pool.Ping(octx)
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("cannot connect to PostgreSQL at %s: %w", redactURL(cfg.dsn), err)
	}
	s.closers = append(s.closers, s.pool.Close)
	if err := s.t.create(octx, s.pool, cfg.schema); err != nil {
		s.close()
		return nil, err
	}
	if s.keys, err = pgstore.New(octx, s.pool, pgstore.WithSchema(cfg.schema)); err != nil {
		s.close()
		return nil, err
	}
	s.layer, err = server.New(s.keys,
		server.WithPrincipal(server.BearerPrincipal([]byte(cfg.secret))),
		server.WithDownstreamSecret([]byte(cfg.secret)),
		server.WithLease(cfg.lease), server.WithStoreTimeout(cfg.storeTimeout))
	if err != nil {
		s.close()
		return nil, err
	}
	intents, err := pgkeystore.Open(octx, cfg.dsn, &pgkeystore.Options{Schema: cfg.schema})
	if err != nil {
		s.close()
		return nil, err
	}
	s.client, err = idem.New(idem.WithStore(intents), idem.WithDialect(dialect.Stripe()),
		idem.WithClaimLease(cfg.claimLease), idem.WithMaxAttempts(3),
		// A call a resend cannot prove is settled from the provider's ledger.
		idem.WithReconciler(s.reconciler()),
		// An intent begun by a process that died is sent by this one,
		// with its own credentials: the keystore never holds them.
		idem.WithRequestEditor(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+cfg.token)
			return nil
		}))
	if err != nil {
		_ = intents.Close()
		s.close()
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = s.client.Close() })
	if s.saga, err = saga.New(s.client, saga.WithKeySecret(s.sagaSecret)); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close releases what newService opened, last first.
func (s *service) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

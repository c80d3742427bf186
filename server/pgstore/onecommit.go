package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/server"
)

var _ server.OneCommitStore = (*Store)(nil)

// OnceTx is the transaction CommitOnce holds for one request, which the
// handler finds with OnceFrom. The handler makes its effect in it in
// either of two ways, or both:
//
//   - Queue: statements known before they run. They go, after the
//     handler has answered, in one round trip with the key's record
//     completed with that answer, as one implicit transaction: one
//     statement and one durable commit more than the effect alone.
//   - Tx: a transaction the handler reads in before it writes. Its first
//     statement claims the key; the queued statements and the
//     completion follow the handler, then the one commit.
//
// The handler must not commit or roll back either itself: CommitOnce
// commits when the handler's answer is final and rolls back otherwise.
type OnceTx struct {
	s       *Store
	q       *onceQueries
	req     server.OnceRequest
	batch   pgx.Batch
	tx      pgx.Tx
	token   string
	taken   bool
	claimed bool
}

type onceKey struct{}

// OnceFrom returns the transaction CommitOnce holds for the request whose
// context is ctx (server.Middleware.WrapOneCommit), if any.
func OnceFrom(ctx context.Context) (*OnceTx, bool) {
	o, ok := ctx.Value(onceKey{}).(*OnceTx)
	return o, ok
}

// Queue adds a statement to the request's effect; it runs after the
// handler returned, in the transaction that commits the key's answer.
// Its callbacks (QueuedQuery.Exec and the like) run then.
func (o *OnceTx) Queue(sql string, args ...any) *pgx.QueuedQuery {
	return o.batch.Queue(sql, args...)
}

// Tx returns the request's transaction, begun under ctx on the first
// call: its first statement claims the key, so a concurrent duplicate
// waits for it. When the key is taken it returns server.ErrKeyTaken;
// whatever the handler then answers, CommitOnce rolls back and the layer
// answers from the key's record.
func (o *OnceTx) Tx(ctx context.Context) (pgx.Tx, error) {
	switch {
	case o.taken:
		return nil, server.ErrKeyTaken
	case o.tx != nil:
		return o.tx, nil
	}
	tx, err := o.s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: begin: %w", err)
	}
	o.tx = tx
	if o.req.Timeout > 0 {
		if _, err := tx.Exec(ctx, boundTransaction, timeoutSetting(o.req.Timeout)); err != nil {
			return nil, o.failed(ctx, err)
		}
	}
	r := o.req
	o.token = rand.Text()
	var claimed bool
	err = tx.QueryRow(ctx, o.q.claimReserved, r.Scope.Principal, r.Scope.Method, r.Scope.Route, r.Key, r.Fingerprint,
		o.token, max(r.Lease, r.Timeout).Microseconds()).Scan(&claimed)
	if errors.Is(err, pgx.ErrNoRows) {
		o.taken = true
		return nil, server.ErrKeyTaken
	}
	if err != nil {
		return nil, o.failed(ctx, err)
	}
	o.claimed = true
	return tx, nil
}

// failed words err, a statement's failure in the request's transaction,
// as CommitOnce returns it.
func (o *OnceTx) failed(ctx context.Context, err error) error {
	return fmt.Errorf("pgstore: commit once: %w", effectTimeout(ctx, server.Completion{Timeout: o.req.Timeout}, err))
}

// CommitOnce implements server.OneCommitStore: the key's record, the
// effect run makes through OnceFrom and run's answer commit as one
// transaction. A duplicate of the key waits on the record's unique index
// for that transaction, then finds the record and gets ErrKeyTaken.
func (s *Store) CommitOnce(ctx context.Context, req server.OnceRequest, run server.OnceRun) error {
	if req.Key == "" || req.Fingerprint == "" {
		return errors.New("pgstore: commit once needs a key and a fingerprint")
	}
	if err := checkText("principal", req.Scope.Principal, "method", req.Scope.Method, "route", req.Scope.Route,
		"key", req.Key, "fingerprint", req.Fingerprint); err != nil {
		return err
	}
	o := &OnceTx{s: s, q: onceQueriesFor(s.schema), req: req}
	resp, err := run(context.WithValue(ctx, onceKey{}, o))
	if o.tx != nil {
		// A no-op once committed.
		defer func() { _ = o.tx.Rollback(context.WithoutCancel(ctx)) }()
	}
	switch {
	case o.taken:
		return server.ErrKeyTaken
	case err != nil:
		return err
	case o.tx != nil && !o.claimed:
		return errors.New("pgstore: commit once: the transaction failed before it claimed the key")
	}
	c := server.Completion{Reservation: server.Reservation{Scope: req.Scope, Key: req.Key, Token: o.token},
		Response: resp, Retention: req.Retention, Timeout: req.Timeout}
	args, err := completionArgs(c)
	if err != nil {
		return fmt.Errorf("pgstore: commit once: %w", err)
	}
	if o.tx != nil {
		return o.commitTx(ctx, args)
	}
	args[4] = req.Fingerprint // the claim's fifth argument is the fingerprint, not a token
	b := &pgx.Batch{}
	bound := "0" // PostgreSQL's "no limit"
	if req.Timeout > 0 {
		bound = timeoutSetting(req.Timeout)
	}
	b.Queue(o.q.claimCompleted, append(args, bound)...)
	b.QueuedQueries = append(b.QueuedQueries, o.batch.QueuedQueries...)
	err, closeErr := s.sendOnce(ctx, req, b)
	err, closeErr = effectTimeout(ctx, c, err), effectTimeout(ctx, c, closeErr)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == fencedState:
		return server.ErrKeyTaken
	case err != nil:
		return fmt.Errorf("pgstore: commit once: %w", err)
	case closeErr != nil:
		return fmt.Errorf("pgstore: commit once: effect: %w", closeErr)
	}
	return nil
}

// commitTx completes the claimed record in the handler's transaction
// with the queued statements, in one round trip, then commits.
func (o *OnceTx) commitTx(ctx context.Context, args []any) error {
	b := &pgx.Batch{}
	b.Queue(o.q.complete, args...)
	b.QueuedQueries = append(b.QueuedQueries, o.batch.QueuedQueries...)
	br := o.tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	closeErr := br.Close()
	switch {
	case err != nil:
		return o.failed(ctx, err)
	case tag.RowsAffected() != 1:
		// The transaction holds the record's row since its claim: only a
		// handler that changed it itself gets here.
		return fmt.Errorf("pgstore: commit once: the key's record changed inside its own transaction")
	case closeErr != nil:
		return o.failed(ctx, closeErr)
	}
	if err := o.tx.Commit(ctx); err != nil {
		return o.failed(ctx, err)
	}
	return nil
}

// sendOnce sends b, the claim and the effect, and returns the claim's
// error and the rest's. Past req.Timeout it asks PostgreSQL to cancel
// what the connection is doing (the claim waiting on a duplicate's
// transaction included), so the implicit transaction rolls back; the
// connection is then closed rather than reused. The claim itself sets
// lock_timeout and statement_timeout for the statements after it, so no
// statement of its own is spent on the bound.
func (s *Store) sendOnce(ctx context.Context, req server.OnceRequest, b *pgx.Batch) (err, closeErr error) {
	// The same bounded send as a completion's batch: only the timeout of
	// the completion is read.
	return s.sendBounded(ctx, server.Completion{Timeout: req.Timeout}, b)
}

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/server"
)

// boundTransaction bounds the rest of the transaction it runs in on the
// server's side: a lock wait (lock_timeout) and each statement
// (statement_timeout) give up after $1, and the transaction rolls back.
// set_config(…, true) lasts until the transaction ends, implicit
// (a batch) or not.
const boundTransaction = `SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $1, true)`

// SQLSTATEs of a statement PostgreSQL gave up on.
const (
	lockNotAvailable = "55P03" // lock_timeout
	queryCanceled    = "57014" // statement_timeout
)

// timeoutSetting is d as a PostgreSQL duration setting, in whole
// milliseconds, at least one.
func timeoutSetting(d time.Duration) string {
	return fmt.Sprintf("%dms", max(d.Milliseconds(), 1))
}

// effectAnswerGrace is how much longer than a completion's Timeout the
// store waits for PostgreSQL's answer: PostgreSQL gives up first and rolls
// back, so the client seldom leaves a transaction whose outcome it does
// not know (that one is fenced as ever: a retry replays it or runs).
func effectAnswerGrace(d time.Duration) time.Duration {
	return max(d/10, 20*time.Millisecond)
}

// boundEffect returns ctx ended after c.Timeout and its grace, when c has
// a timeout.
func boundEffect(ctx context.Context, c server.Completion) (context.Context, context.CancelFunc) {
	if c.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.Timeout+effectAnswerGrace(c.Timeout))
}

// TimedOut reports whether err, from a statement of a transaction that
// CompleteBatch or CompleteTx bounded (Completion.Timeout), means the
// bound ended it: PostgreSQL gave up on a lock wait (lock_timeout) or a
// statement (statement_timeout), or the context's deadline passed (begin
// a CompleteTx transaction under Held.Context). The transaction did not
// commit; answer 503 with Retry-After.
func TimedOut(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == lockNotAvailable || pgErr.Code == queryCanceled
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// effectTimeout turns err, the failure of a transaction bounded by
// c.Timeout, into a *server.StoreTimeoutError when the bound ended it
// (TimedOut). parent is the context before the bound: a deadline of its
// own that ended the call is returned as it is.
func effectTimeout(parent context.Context, c server.Completion, err error) error {
	if err == nil || c.Timeout <= 0 || !TimedOut(err) || parent.Err() != nil {
		return err
	}
	return fmt.Errorf("%w (%w)", &server.StoreTimeoutError{Op: "complete", Timeout: c.Timeout}, err)
}

// sendBounded sends b, whose first statement is the completion (which
// sets the bound of the rest when c.Timeout is positive), and returns
// the error of the completion and of the rest. Past c.Timeout it asks
// PostgreSQL to cancel what the connection is doing: a lock wait before
// the bound is set (the completion's own, or one while a statement is
// prepared) gives up too, and the implicit transaction rolls back. The connection is then closed rather than reused, so the
// cancel request cannot reach a later query.
func (s *Store) sendBounded(ctx context.Context, c server.Completion, b *pgx.Batch) (err, closeErr error) {
	if c.Timeout <= 0 {
		br := s.pool.SendBatch(ctx, b)
		_, err = br.Exec()
		return err, br.Close()
	}
	ctx, cancel := boundEffect(ctx, c)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err, nil
	}
	var fired atomic.Bool
	canceled := make(chan struct{})
	timer := time.AfterFunc(c.Timeout, func() {
		defer close(canceled)
		fired.Store(true)
		cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), effectAnswerGrace(c.Timeout))
		defer stop()
		_ = conn.Conn().PgConn().CancelRequest(cctx)
	})
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	closeErr = br.Close()
	if !timer.Stop() {
		<-canceled
	}
	if fired.Load() {
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
	}
	conn.Release()
	return err, closeErr
}
